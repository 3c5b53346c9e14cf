package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/discord"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/googlechat"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/lark"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/matrix"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/mattermost"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/rocketchat"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/signal"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/slack"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/teams"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/telegram"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/wecom"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/chat/zulip"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/incident/opsgenie"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/incident/pagerduty"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/bark"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/gotify"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/ifttt"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/join"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/mqtt"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/ntfy"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/pushbullet"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/pushover"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/push/signalgrid"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/sms/twilio"
	"github.com/nicholas-fedor/shoutrrr/pkg/services/specialized/notifiarr"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"
)

// shoutrrrServices are the schemes sent by shoutrrr's own service packages,
// each imported alone. shoutrrr's router (the shoutrrr package,
// pkg/router) is not used: it links every service, and three of them
// (generic, logger, smtp) execute text/template templates; one reachable
// (*template.Template).Execute makes the linker keep every exported method
// of every type in the binary (docs/performance.md, "Where the agent's
// memory goes"). Those three are ours: genericSender, smtpSender and
// loggerSender. The table is shoutrrr v0.18.0's pkg/router/servicemap.go
// without them; xmpp is not in it (shoutrrr builds it only with a build tag).
var shoutrrrServices = map[string]func() types.Service{
	"bark":       func() types.Service { return &bark.Service{} },
	"discord":    func() types.Service { return &discord.Service{} },
	"gotify":     func() types.Service { return &gotify.Service{} },
	"googlechat": func() types.Service { return &googlechat.Service{} },
	"hangouts":   func() types.Service { return &googlechat.Service{} },
	"ifttt":      func() types.Service { return &ifttt.Service{} },
	"lark":       func() types.Service { return &lark.Service{} },
	"join":       func() types.Service { return &join.Service{} },
	"matrix":     func() types.Service { return &matrix.Service{} },
	"mattermost": func() types.Service { return &mattermost.Service{} },
	"mqtt":       func() types.Service { return &mqtt.Service{} },
	"mqtts":      func() types.Service { return &mqtt.Service{} },
	"notifiarr":  func() types.Service { return &notifiarr.Service{} },
	"ntfy":       func() types.Service { return &ntfy.Service{} },
	"opsgenie":   func() types.Service { return &opsgenie.Service{} },
	"pagerduty":  func() types.Service { return &pagerduty.Service{} },
	"pushbullet": func() types.Service { return &pushbullet.Service{} },
	"pushover":   func() types.Service { return &pushover.Service{} },
	"rocketchat": func() types.Service { return &rocketchat.Service{} },
	"signal":     func() types.Service { return &signal.Service{} },
	"signalgrid": func() types.Service { return &signalgrid.Service{} },
	"slack":      func() types.Service { return &slack.Service{} },
	"teams":      func() types.Service { return &teams.Service{} },
	"telegram":   func() types.Service { return &telegram.Service{} },
	"twilio":     func() types.Service { return &twilio.Service{} },
	"wecom":      func() types.Service { return &wecom.Service{} },
	"zulip":      func() types.Service { return &zulip.Service{} },
}

// Our own senders' schemes (besides their generic+http and generic+https forms).
const (
	schemeGeneric = "generic"
	schemeSMTP    = "smtp"
	schemeLogger  = "logger"
)

// Schemes lists every service a --notify-url may name, sorted: shoutrrr's
// services above and ours. generic also takes generic+http:// and
// generic+https://, notifiarr notifiarr+http(s)://.
func Schemes() []string {
	out := []string{schemeGeneric, schemeSMTP, schemeLogger}
	for s := range shoutrrrServices {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

var errUnknownService = errors.New("unknown service")

// newSender builds the sender for one notify URL. Its errors may hold parts
// of the URL: the caller redacts them.
func newSender(raw string, log *slog.Logger) (Send, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	base, custom, isCustom := strings.Cut(scheme, "+")
	switch base {
	case schemeGeneric:
		g, err := newGeneric(u, custom, isCustom)
		if err != nil {
			return nil, err
		}
		return g.send, nil
	case schemeSMTP, schemeLogger:
		if isCustom {
			return nil, fmt.Errorf("%s: custom URLs (%s+…) are not supported by the service", base, base)
		}
		if base == schemeLogger {
			return loggerSender(log), nil
		}
		s, err := newSMTP(u, log)
		if err != nil {
			return nil, err
		}
		return s.send, nil
	}
	factory, ok := shoutrrrServices[base]
	if !ok {
		return nil, fmt.Errorf("%w %q: supported are %s", errUnknownService, base, strings.Join(Schemes(), ", "))
	}
	service := factory()
	serviceURL := u
	if isCustom {
		// As shoutrrr's router: a service that converts custom URLs
		// (notifiarr) takes name+scheme://…; no other does.
		c, ok := service.(types.CustomURLService)
		if !ok {
			return nil, fmt.Errorf("%s: custom URLs (%s+…) are not supported by the service", base, base)
		}
		if serviceURL, err = c.GetServiceURLFromCustom(u); err != nil {
			return nil, fmt.Errorf("%s: converting the custom URL: %w", base, err)
		}
	}
	// No logger: the services' own logs can hold URLs and server answers.
	if err := service.Initialize(serviceURL, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", base, err)
	}
	return shoutrrrSend(service), nil
}

// shoutrrrSend sends through one initialised shoutrrr service, as its
// router did: with the caller's context when the service takes one,
// otherwise in a goroutine the context stops waiting for.
func shoutrrrSend(service types.Service) Send {
	return func(ctx context.Context, text string) error {
		if cs, ok := service.(types.ContextSender); ok {
			return cs.SendContext(ctx, text, &types.Params{})
		}
		errc := make(chan error, 1)
		go func() { errc <- service.Send(text, &types.Params{}) }()
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// loggerSender is logger://: shoutrrr's logger service wrote the message to
// the sender's log. Ours writes it to the agent's log, one line at info.
// The text is already one sanitised line (Post).
func loggerSender(log *slog.Logger) Send {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, text string) error {
		log.InfoContext(ctx, "notification", "service", schemeLogger, "text", text)
		return nil
	}
}
