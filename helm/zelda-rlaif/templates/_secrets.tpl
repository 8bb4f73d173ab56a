{{/* Literal secrets. The services refuse placeholders at start (zelda_rlaif.settings.PLACEHOLDER_SECRETS) and
     would crash-loop; the render refuses them first and names the value to set. */}}

{{/* dict value key: fails when value is a placeholder; empty values are left to the checks that need them. */}}
{{- define "zelda.refusePlaceholder" -}}
{{- $raw := toString (default "" .value) -}}
{{- $placeholders := list "changeme" "change-me" "change_me" "placeholder" "secret" "password" "minioadmin" "xxx" "todo" -}}
{{- if and $raw (or (has (lower $raw) $placeholders) (hasPrefix "<" $raw)) -}}
{{- fail (printf "%s is a placeholder that the services refuse at start: set a real secret there, or leave it empty and name a Secret you created in the existingSecret next to it" .key) -}}
{{- end -}}
{{- end -}}

{{/* Every literal secret the chart or its dependencies would use. */}}
{{- define "zelda.refusePlaceholderSecrets" -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.bus.auth.password "key" "bus.auth.password") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.store.s3.accessKey "key" "store.s3.accessKey") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.store.s3.secretKey "key" "store.s3.secretKey") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.hud.auth.token "key" "hud.auth.token") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.minio.rootUser "key" "minio.rootUser") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.minio.rootPassword "key" "minio.rootPassword") -}}
{{- end -}}
