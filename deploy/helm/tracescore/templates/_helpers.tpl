{{/* The chart's name (nameOverride wins). */}}
{{- define "tracescore.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: the release's, with the chart's name unless the release already holds it. */}}
{{- define "tracescore.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tracescore.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select the pods: the same in the Deployment, the Service, the PDB and the ServiceMonitor. */}}
{{- define "tracescore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tracescore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tracescore.labels" -}}
helm.sh/chart: {{ include "tracescore.chart" . }}
{{ include "tracescore.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tracescore
{{- end -}}

{{- define "tracescore.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tracescore.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "tracescore.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}

{{/* The Secret the pods mount: the user's existing one, or the chart's. */}}
{{- define "tracescore.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "tracescore.fullname" .)) -}}
{{- end -}}

{{/*
The secrets in use, as a YAML map: name -> {key: its key in the Secret, file: its file name in the
mount}. From the existing Secret: the keys named in secrets.existingSecretKeys; else the values given.
*/}}
{{- define "tracescore.secretItems" -}}
{{- $files := dict "judgeApiKey" "judge-api-key" "authToken" "auth-token" "storePassword" "store-password" "kafkaSaslPassword" "kafka-sasl-password" -}}
{{- $items := dict -}}
{{- range $name, $file := $files -}}
{{- if $.Values.secrets.existingSecret -}}
{{- $key := get $.Values.secrets.existingSecretKeys $name -}}
{{- if $key -}}
{{- $_ := set $items $name (dict "key" $key "file" $file) -}}
{{- end -}}
{{- else if get $.Values.secrets $name -}}
{{- $_ := set $items $name (dict "key" $file "file" $file) -}}
{{- end -}}
{{- end -}}
{{- toYaml $items -}}
{{- end -}}

{{/* Bytes of a Kubernetes memory quantity (2Gi, 2560Mi, 3G, 2147483648). */}}
{{- define "tracescore.bytes" -}}
{{- if kindIs "string" . -}}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" . -}}
{{- $unit := trimPrefix $number . -}}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- if or (not $number) (not (hasKey $units $unit)) -}}
{{- fail (printf "resources.limits.memory %q: give a number with one of the units Ki, Mi, Gi, Ti, k, M, G, T" .) -}}
{{- end -}}
{{- mulf $number (get $units $unit) | floor | int64 -}}
{{- else -}}
{{- . | int64 -}}
{{- end -}}
{{- end -}}

{{/*
tracescore's config file: .Values.config, with
- memory_limit: memoryLimitRatio of the container's memory limit, unless config.memory_limit is given;
- each secret in use as its *_file key, pointing at its file in the Secret's mount.
Secrets written into the config itself are refused: they would sit in a ConfigMap.
*/}}
{{- define "tracescore.config" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- $receiver := get $config "receiver" | default dict -}}
{{- $scoring := get $config "scoring" | default dict -}}
{{- $kafka := get $config "kafka" | default dict -}}
{{- $inline := list (list "store_password" (hasKey $config "store_password") "storePassword") (list "receiver.auth_token" (hasKey $receiver "auth_token") "authToken") (list "kafka.sasl_password" (hasKey $kafka "sasl_password") "kafkaSaslPassword") (list "scoring.judge.api_key" (hasKey (get $scoring "judge" | default dict) "api_key") "judgeApiKey") -}}
{{- range $inline -}}
{{- if index . 1 -}}
{{- fail (printf "config.%s would put a secret in a ConfigMap: give it in secrets.%s (or an existing Secret)" (index . 0) (index . 2)) -}}
{{- end -}}
{{- end -}}
{{- if not (hasKey $config "memory_limit") -}}
{{- $limits := (.Values.resources | default dict).limits | default dict -}}
{{- if $limits.memory -}}
{{- $bytes := include "tracescore.bytes" $limits.memory -}}
{{- $_ := set $config "memory_limit" (mulf $bytes .Values.memoryLimitRatio | floor | int64) -}}
{{- end -}}
{{- end -}}
{{- $dir := .Values.secrets.mountPath -}}
{{- $items := include "tracescore.secretItems" . | fromYaml -}}
{{- if hasKey $items "storePassword" -}}
{{- $_ := set $config "store_password_file" (printf "%s/%s" $dir $items.storePassword.file) -}}
{{- end -}}
{{- if hasKey $items "authToken" -}}
{{- $_ := set $receiver "auth_token_file" (printf "%s/%s" $dir $items.authToken.file) -}}
{{- end -}}
{{- if hasKey $items "kafkaSaslPassword" -}}
{{- $_ := set $kafka "sasl_password_file" (printf "%s/%s" $dir $items.kafkaSaslPassword.file) -}}
{{- end -}}
{{- if hasKey $items "judgeApiKey" -}}
{{- $judge := get $scoring "judge" | default dict -}}
{{- if not $judge.model -}}
{{- fail "secrets.judgeApiKey needs config.scoring.judge.model (the judge it is the key of)" -}}
{{- end -}}
{{- $_ := set $judge "api_key_file" (printf "%s/%s" $dir $items.judgeApiKey.file) -}}
{{- $_ := set $scoring "judge" $judge -}}
{{- end -}}
{{- if $receiver -}}
{{- $_ := set $config "receiver" $receiver -}}
{{- end -}}
{{- if $scoring -}}
{{- $_ := set $config "scoring" $scoring -}}
{{- end -}}
{{- if $kafka -}}
{{- $_ := set $config "kafka" $kafka -}}
{{- end -}}
{{- $store := toString (get $config "store") -}}
{{- if not (regexMatch "^https?://" $store) -}}
{{- fail (printf "config.store %q: replicas need a ClickHouse server (http(s)://user@host:port); the embedded store is one process's" $store) -}}
{{- end -}}
{{- if not (get $config "store_database") -}}
{{- $_ := unset $config "store_database" -}}
{{- end -}}
{{- $_ := include "tracescore.database" . -}}
{{- $host := toString (get $receiver "host" | default "127.0.0.1") -}}
{{- if has $host (list "127.0.0.1" "localhost" "::1") -}}
{{- fail (printf "config.receiver.host %s: the probes and the Service cannot reach a loopback address; use 0.0.0.0" $host) -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/*
The ClickHouse database of tracescore's tables, as tracescore resolves it: config.store_database, else
the store DSN's path, else "default". Both given and different: refused (one place for it).
*/}}
{{- define "tracescore.database" -}}
{{- $config := .Values.config | default dict -}}
{{- $setting := toString (get $config "store_database" | default "") -}}
{{- $inPath := regexReplaceAll "^https?://[^/?#]*/?([^?#]*).*$" (toString (get $config "store")) "${1}" | trimSuffix "/" -}}
{{- range $source, $name := dict "config.store_database" $setting "the path of config.store" $inPath -}}
{{- if and $name (not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" $name)) -}}
{{- fail (printf "%s: %q is not a database name tracescore accepts: use letters, digits and _, not starting with a digit" $source $name) -}}
{{- end -}}
{{- end -}}
{{- if and $setting $inPath (ne $setting $inPath) -}}
{{- fail (printf "config.store names database %q in its path but config.store_database is %q: give the database in one place" $inPath $setting) -}}
{{- end -}}
{{- $setting | default $inPath | default "default" -}}
{{- end -}}

{{/* The container's ports, from the config. */}}
{{- define "tracescore.grpcPort" -}}
{{- (.Values.config.receiver | default dict).grpc_port | default 4317 | int -}}
{{- end -}}

{{- define "tracescore.httpPort" -}}
{{- (.Values.config.receiver | default dict).http_port | default 4318 | int -}}
{{- end -}}

{{- define "tracescore.healthPort" -}}
{{- (.Values.config.receiver | default dict).health_port | default "" -}}
{{- end -}}

{{/* HTTPS when the receivers serve TLS (the probes on the OTLP/HTTP port then use it too). */}}
{{- define "tracescore.scheme" -}}
{{- if (.Values.config.receiver | default dict).tls_cert -}}HTTPS{{- else -}}HTTP{{- end -}}
{{- end -}}

{{/* The scrape must send the token: the chart mounts one and config.receiver.metrics_open is not set. */}}
{{- define "tracescore.metricsNeedToken" -}}
{{- $items := include "tracescore.secretItems" . | fromYaml -}}
{{- if and (hasKey $items "authToken") (not (.Values.config.receiver | default dict).metrics_open) -}}true{{- end -}}
{{- end -}}
