{{/* Chart name. */}}
{{- define "rebootwatch-agent.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name when it already contains the chart name. */}}
{{- define "rebootwatch-agent.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Selector labels (also on every object). */}}
{{- define "rebootwatch-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rebootwatch-agent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object: the selector labels plus Helm's bookkeeping. */}}
{{- define "rebootwatch-agent.labels" -}}
{{ include "rebootwatch-agent.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ include "rebootwatch-agent.imageTag" . | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The leader Lease's name. */}}
{{- define "rebootwatch-agent.leaseName" -}}
{{- .Values.leaderElection.leaseName | default (include "rebootwatch-agent.fullname" .) }}
{{- end }}

{{/* The Secret holding the notify URLs. */}}
{{- define "rebootwatch-agent.notifySecret" -}}
{{- .Values.notify.existingSecret | default (printf "%s-notify" (include "rebootwatch-agent.fullname" .)) }}
{{- end }}

{{/* The keys of that Secret, one URL each. */}}
{{- define "rebootwatch-agent.notifyKeys" -}}
{{- if .Values.notify.existingSecret }}
{{- toJson .Values.notify.existingSecretKeys }}
{{- else }}
{{- $keys := list }}
{{- range $i, $u := .Values.notify.urls }}
{{- $keys = append $keys (printf "url-%d" $i) }}
{{- end }}
{{- toJson $keys }}
{{- end }}
{{- end }}

{{/* The image's repository: required, as no image is published (values.yaml,
docs/agent.md#install). */}}
{{- define "rebootwatch-agent.imageRepository" -}}
{{- required "image.repository is required: no rebootwatch-agent image is published. Build it with `make image`, push dist/rebootwatch-agent-image to your registry and set image.repository and image.tag (docs/agent.md#install)" .Values.image.repository }}
{{- end }}

{{/* The image's tag: image.tag, else the chart's appVersion (the release's
version in a chart `make release` packaged). */}}
{{- define "rebootwatch-agent.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion | toString }}
{{- end }}

{{/* The pull policy: image.pullPolicy, else IfNotPresent for a version tag
(v1.2.3, 1.2.3-rc.1: never moves) and Always for any other (latest, dev, a
branch: moves, and a node's cached copy would go stale). */}}
{{- define "rebootwatch-agent.pullPolicy" -}}
{{- if .Values.image.pullPolicy }}
{{- .Values.image.pullPolicy }}
{{- else if regexMatch "^v?[0-9]+[.][0-9]+[.][0-9]+([-+][0-9A-Za-z.+-]+)?$" (include "rebootwatch-agent.imageTag" .) }}
{{- "IfNotPresent" }}
{{- else }}
{{- "Always" }}
{{- end }}
{{- end }}
