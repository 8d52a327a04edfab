{{/*
Names are fixed, not derived from the release: the APIService, the team ClusterRoles the workers
bind by name, and the serving certificate's DNS name (butler-apiserver.<namespace>.svc) all
depend on them. One release per cluster.
*/}}
{{- define "butler.name" -}}butler-apiserver{{- end -}}

{{- define "butler.labels" -}}
app.kubernetes.io/name: butler-apiserver
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "butler.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "butler.selectorLabels" -}}
app.kubernetes.io/name: butler-apiserver
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "butler.tag" -}}{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}

{{/* The Service's DNS name, the one the aggregator checks the serving certificate against. */}}
{{- define "butler.serviceDNS" -}}butler-apiserver.{{ .Release.Namespace }}.svc{{- end -}}

{{- define "butler.servingSecret" -}}butler-apiserver-serving{{- end -}}

{{/*
The generated serving certificate: the Secret's data if a release made it before (lookup), so
an upgrade keeps the CA the APIService trusts; else a new CA (10 years) and certificate signed
by it. Returns YAML with ca.crt, tls.crt, tls.key (base64). Rendered once per template that
needs it: the result is cached in .Values so the Secret and the APIService agree.
*/}}
{{- define "butler.generatedServing" -}}
{{- if not (hasKey .Values "__generatedServing") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "butler.servingSecret" .) -}}
{{- if and $existing (index $existing.data "ca.crt") -}}
{{- $_ := set .Values "__generatedServing" (dict "ca.crt" (index $existing.data "ca.crt") "tls.crt" (index $existing.data "tls.crt") "tls.key" (index $existing.data "tls.key")) -}}
{{- else -}}
{{- $ca := genCA "butler-apiserver-ca" 3650 -}}
{{- $dns := include "butler.serviceDNS" . -}}
{{- $cert := genSignedCert $dns nil (list $dns (printf "%s.cluster.local" $dns) (printf "butler-apiserver.%s" .Release.Namespace) "butler-apiserver") 3650 $ca -}}
{{- $_ := set .Values "__generatedServing" (dict "ca.crt" ($ca.Cert | b64enc) "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc)) -}}
{{- end -}}
{{- end -}}
{{- toYaml .Values.__generatedServing -}}
{{- end -}}
