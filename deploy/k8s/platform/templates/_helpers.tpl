{{- define "platform.name" -}}{{ .Release.Name }}{{- end -}}

{{- define "platform.labels" -}}
app.kubernetes.io/part-of: {{ include "platform.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- /* The Secret that holds SERVICE_TOKEN: the operator's, or the one the chart generates. */ -}}
{{- define "platform.serviceTokenSecret" -}}
{{- .Values.serviceToken.existingSecret | default (printf "%s-service-token" (include "platform.name" .)) -}}
{{- end -}}
