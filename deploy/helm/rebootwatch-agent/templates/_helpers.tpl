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
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
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
