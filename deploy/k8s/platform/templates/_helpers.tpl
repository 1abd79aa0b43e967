{{- define "platform.name" -}}{{ .Release.Name }}{{- end -}}

{{- define "platform.labels" -}}
app.kubernetes.io/part-of: {{ include "platform.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- /* The Secret that holds SERVICE_TOKEN: the operator's, or the one the chart generates. */ -}}
{{- define "platform.serviceTokenSecret" -}}
{{- .Values.serviceToken.existingSecret | default (printf "%s-service-token" (include "platform.name" .)) -}}
{{- end -}}

{{- /* The deployed services and their default ports, written from the service registry by `npm run generate`. */ -}}
{{- define "platform.services" -}}
{{- (.Files.Get "services.json" | fromJson).services | toJson -}}
{{- end -}}

{{- /* Settings of one service (dict "root" $ "svc" name): values.yaml's services.<name> over serviceDefaults. */ -}}
{{- define "platform.serviceValues" -}}
{{- merge (deepCopy (index .root.Values.services .svc | default dict)) (deepCopy .root.Values.serviceDefaults) | toJson -}}
{{- end -}}

{{- /* A service's port (dict "root" $ "svc" name): services.<name>.port if set, else the registry's default. */ -}}
{{- define "platform.port" -}}
{{- $defaults := include "platform.services" .root | fromJson -}}
{{- (index .root.Values.services .svc | default dict).port | default (index $defaults .svc) | int -}}
{{- end -}}
