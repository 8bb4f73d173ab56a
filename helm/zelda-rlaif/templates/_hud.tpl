{{/* The HUD: the Secret holding the token browsers present. */}}

{{- define "zelda.hudSecretName" -}}
{{- if .Values.hud.auth.existingSecret -}}
{{- .Values.hud.auth.existingSecret -}}
{{- else if .Values.hud.auth.token -}}
{{- include "zelda.componentName" (dict "root" . "component" "hud-auth") -}}
{{- else -}}
{{- fail "the HUD listens beyond loopback in a pod and needs an access token: set hud.auth.existingSecret or hud.auth.token" -}}
{{- end -}}
{{- end -}}
