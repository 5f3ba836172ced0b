{{/* The release's objects are named after the release, with the chart's name unless it is in it. */}}
{{- define "bc.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "bc.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "bc.labels" -}}
{{ include "bc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "bc.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "bc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "bc.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* secretEnv NAME SECRET: an env entry read from a Secret, never a value in the chart. */}}
{{- define "bc.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret.name }}
      key: {{ .secret.key }}
{{- end -}}

{{/* The database URL, the one variable the migration and the replicas share. */}}
{{- define "bc.databaseEnv" -}}
{{- $_ := required "database.urlSecret.name: the Secret holding BC_DATABASE_URL" .Values.database.urlSecret.name -}}
{{ include "bc.secretEnv" (dict "name" "BC_DATABASE_URL" "secret" .Values.database.urlSecret) }}
{{- end -}}

{{/* Pod and container security: non-root, no privilege, read-only root filesystem. */}}
{{- define "bc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "bc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}
