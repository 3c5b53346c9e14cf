module github.com/rebootwatch/rebootwatch/hack/ansi2png

go 1.26.7

require (
	golang.org/x/image v0.48.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
