{{/* Prefix of every object's name. */}}
{{- define "acko.fullname" -}}
{{- default "acko" .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "acko.labels" -}}
app.kubernetes.io/name: acko
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "acko.selectorLabels" -}}
app.kubernetes.io/name: acko
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end -}}

{{- define "acko.serviceAccountName" -}}
{{- default (printf "%s-controller-manager" (include "acko.fullname" .)) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "acko.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end -}}

{{- define "acko.webhookConfigurationName" -}}
{{ include "acko.fullname" . }}-validating-webhook-configuration
{{- end -}}

{{- define "acko.webhookSecretName" -}}
{{ include "acko.fullname" . }}-webhook-server-cert
{{- end -}}

{{- define "acko.webhookServiceName" -}}
{{ include "acko.fullname" . }}-webhook-service
{{- end -}}

{{- define "acko.selfSigned" -}}
{{- if and .Values.webhook.enabled (eq .Values.webhook.certificate "self-signed") }}true{{ end -}}
{{- end -}}

{{/*
The rules of a role as `make manifests` writes them into files/rbac (from config/rbac and
config/webhook-certs), so that the chart cannot drift from the generated RBAC. Names in
resourceNames carry the default prefix acko-, replaced by this release's prefix.
Call with (list . "file.yaml").
*/}}
{{- define "acko.rules" -}}
{{- $root := index . 0 -}}
{{- $role := $root.Files.Get (printf "files/rbac/%s" (index . 1)) | fromYaml -}}
{{- $prefix := printf "%s-" (include "acko.fullname" $root) -}}
{{- $rules := list -}}
{{- range $role.rules -}}
{{- $rule := deepCopy . -}}
{{- if hasKey $rule "resourceNames" -}}
{{- $names := list -}}
{{- range $rule.resourceNames }}{{ $names = append $names (regexReplaceAll "^acko-" . $prefix) }}{{ end -}}
{{- $_ := set $rule "resourceNames" $names -}}
{{- end -}}
{{- $rules = append $rules $rule -}}
{{- end -}}
{{- toYaml $rules -}}
{{- end -}}

{{- define "acko.subject" -}}
- kind: ServiceAccount
  name: {{ include "acko.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
