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

{{- /* Settings of one service (dict "root" $ "svc" name): values.yaml's services.<name> over serviceDefaults.
Maps merge key by key; the service's own scalars always win, zero included (merge alone would turn
replicas: 0 back into the default). */ -}}
{{- define "platform.serviceValues" -}}
{{- $own := index (.root.Values.services | default dict) .svc | default dict -}}
{{- $cfg := mergeOverwrite (deepCopy (.root.Values.serviceDefaults | default dict)) (deepCopy $own) -}}
{{- range $k, $v := $own -}}
{{- if not (kindIs "map" $v) }}{{ $_ := set $cfg $k $v }}{{ end -}}
{{- end -}}
{{- $cfg | toJson -}}
{{- end -}}

{{- /* A service's port (dict "root" $ "svc" name): services.<name>.port if set, else the registry's default. */ -}}
{{- define "platform.port" -}}
{{- $defaults := include "platform.services" .root | fromJson -}}
{{- $own := index (.root.Values.services | default dict) .svc | default dict -}}
{{- $port := ternary $own.port (index $defaults .svc) (hasKey $own "port") | int -}}
{{- if or (lt $port 1) (gt $port 65535) -}}
{{- fail (printf "services.%s.port must be a port number (1-65535), got %d" .svc $port) -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{- /* The image every container runs: image.repository (required) at image.tag, default the chart's appVersion. */ -}}
{{- define "platform.image" -}}
{{- $repository := required "image.repository is required" .Values.image.repository -}}
{{- printf "%s:%s" $repository (toString (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{- /* The Secret every pod reads as environment: existingSecret, or the one the chart writes from values. */ -}}
{{- define "platform.envSecret" -}}
{{- .Values.existingSecret | default (printf "%s-env" (include "platform.name" .)) -}}
{{- end -}}

{{- /* The labels that pick one service's pods (dict "root" $ "svc" name). */ -}}
{{- define "platform.selectorLabels" -}}
app.kubernetes.io/part-of: {{ include "platform.name" .root }}
app.kubernetes.io/component: {{ .svc }}
{{- end -}}

{{- /* Environment every container gets (the Deployments' and the migration Job's). */ -}}
{{- define "platform.envFrom" -}}
- configMapRef: { name: {{ include "platform.name" . }}-env }
- secretRef: { name: {{ include "platform.envSecret" . }} }
{{- end -}}

{{- /* The writable /tmp of a read-only root filesystem. */ -}}
{{- define "platform.tmpVolume" -}}
- name: tmp
  emptyDir: { sizeLimit: 256Mi }
{{- end -}}

{{- /* Variables one service's container reads from Secrets you manage (dict "root" $ "svc" name), besides
SERVICE_TOKEN: OTEL_EXPORTER_OTLP_HEADERS (every service), STRIPE_* (the gateway), S3 credentials (messaging).
optional: a key absent from the Secret leaves its variable unset. */ -}}
{{- define "platform.secretEnv" -}}
{{- $v := .root.Values -}}
{{- $refs := list -}}
{{- with $v.tracing.headers.existingSecret -}}
{{- $refs = append $refs (list "OTEL_EXPORTER_OTLP_HEADERS" . $v.tracing.headers.key) -}}
{{- end -}}
{{- if and (eq .svc "gateway") $v.stripe.existingSecret -}}
{{- $refs = append $refs (list "STRIPE_SECRET_KEY" $v.stripe.existingSecret $v.stripe.secretKeyKey) -}}
{{- $refs = append $refs (list "STRIPE_WEBHOOK_SECRET" $v.stripe.existingSecret $v.stripe.webhookSecretKey) -}}
{{- end -}}
{{- if and (eq .svc "messaging") $v.s3.bucket $v.s3.existingSecret -}}
{{- $refs = append $refs (list "S3_ACCESS_KEY_ID" $v.s3.existingSecret $v.s3.accessKeyIdKey) -}}
{{- $refs = append $refs (list "S3_SECRET_ACCESS_KEY" $v.s3.existingSecret $v.s3.secretAccessKeyKey) -}}
{{- end -}}
{{- range $refs }}
- name: {{ index . 0 }}
  valueFrom:
    secretKeyRef: { name: {{ index . 1 }}, key: {{ index . 2 }}, optional: true }
{{- end -}}
{{- end -}}

{{- /* With existingSecret, the variables a service cannot run without, referenced by key (not optional): a key
missing from that Secret stops the pod at CreateContainerConfigError naming it, where envFrom alone would leave the
variable unset and the pod would run wrong (no DATABASE_URL: embedded mode inside the pod; no NATS_URL: a bus that
reaches no other pod; no SMTP_URL: mail to a local sink; no SESSION_SECRET: sessions each gateway replica refuses
from the others). (dict "root" $ "svc" name) */ -}}
{{- define "platform.requiredEnv" -}}
{{- with .root.Values.existingSecret -}}
{{- $secret := . -}}
{{- $keys := list "DATABASE_URL" "NATS_URL" -}}
{{- if eq $.svc "gateway" }}{{ $keys = append $keys "SESSION_SECRET" }}{{ end -}}
{{- if has $.svc (list "identity" "messaging") }}{{ $keys = append $keys "SMTP_URL" }}{{ end -}}
{{- range $keys }}
- name: {{ . }}
  valueFrom:
    secretKeyRef: { name: {{ $secret }}, key: {{ . }} }
{{- end -}}
{{- end -}}
{{- end -}}
