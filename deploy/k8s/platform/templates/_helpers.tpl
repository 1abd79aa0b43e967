{{- define "platform.name" -}}{{ .Release.Name }}{{- end -}}

{{- define "platform.labels" -}}
app.kubernetes.io/part-of: {{ include "platform.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
