{{/* The trainer: run id, KubeRay object names, the RayJob's command and the Ray containers' environment. */}}

{{- define "zelda.runId" -}}
{{- default .Release.Name .Values.trainer.runId -}}
{{- end -}}

{{/* KubeRay refuses RayJob names over 47 characters and RayCluster names over 53 (it appends suffixes). */}}
{{- define "zelda.rayJobName" -}}
{{- $name := printf "%s-train-%s" (include "zelda.fullname" .) (include "zelda.runId" . | lower) -}}
{{- if gt (len $name) 47 -}}
{{- fail (printf "the RayJob name %q is longer than KubeRay's 47 characters: shorten trainer.runId or set fullnameOverride" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{- define "zelda.rayClusterName" -}}
{{- $name := printf "%s-ray" (include "zelda.fullname" .) -}}
{{- if gt (len $name) 53 -}}
{{- fail (printf "the RayCluster name %q is longer than KubeRay's 53 characters: set fullnameOverride" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* The command the RayJob runs on the head pod. */}}
{{- define "zelda.trainerEntrypoint" -}}
{{- $args := list "zelda-rlaif" "trainer" "--ray-address" "auto" "--no-progress" -}}
{{- if .Values.trainer.resume -}}
{{- $args = append $args "--resume" -}}
{{- end -}}
{{- range .Values.trainer.extraArgs -}}
{{- $args = append $args (. | toString | squote) -}}
{{- end -}}
{{- join " " $args -}}
{{- end -}}

{{/* Environment of every Ray container (head, workers, submitter): the trainer reads its settings in the
     driver on the head and in the env runners on the workers. */}}
{{- define "zelda.trainerEnv" -}}
{{ include "zelda.commonEnv" . }}
- name: ZELDA_TRAINER_RUN_ID
  value: {{ include "zelda.runId" . | quote }}
{{- with .Values.trainer.epochs }}
- name: ZELDA_TRAINER_EPOCHS
  value: {{ . | quote }}
{{- end }}
- name: ZELDA_TRAINER_NUM_ENV_RUNNERS
  value: {{ .Values.trainer.numEnvRunners | quote }}
- name: ZELDA_TRAINER_ENVS_PER_RUNNER
  value: {{ .Values.trainer.envsPerRunner | quote }}
- name: ZELDA_TRAINER_STEPS_PER_EPOCH
  value: {{ .Values.trainer.stepsPerEpoch | quote }}
- name: ZELDA_TRAINER_NUM_GPUS_PER_LEARNER
  value: {{ ternary .Values.trainer.learner.gpus 0 .Values.trainer.learner.enabled | quote }}
- name: ZELDA_TRAINER_SHAPING_MODE
  value: {{ .Values.trainer.shapingMode | quote }}
{{- if .Values.trainer.rom.volume }}
- name: ZELDA_TRAINER_ROM
  value: {{ printf "/roms/%s" .Values.trainer.rom.file | quote }}
{{- if .Values.trainer.rom.stateFile }}
- name: ZELDA_TRAINER_STATE
  value: {{ printf "/roms/%s" .Values.trainer.rom.stateFile | quote }}
{{- end }}
{{- end }}
{{- with .Values.trainer.guidanceLlm.existingSecret }}
- name: ZELDA_GUIDANCE_LLM_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.trainer.guidanceLlm.apiKeyKey }}
{{- end }}
{{- if not .Values.trainer.rayTokenAuth }}
- name: RAY_AUTH_MODE
  value: disabled
{{- end }}
- name: RAY_USAGE_STATS_ENABLED
  value: "0"
- name: OMP_NUM_THREADS
  value: "1"
{{- with .Values.trainer.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
