{{/* Names and labels. */}}
{{- define "plant-store.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "plant-store.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "plant-store.postgresql.fullname" -}}
{{- printf "%s-postgresql" (include "plant-store.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "plant-store.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "plant-store.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "plant-store.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: plant-store
{{- end }}

{{/* Labels of the app's resources and pods. */}}
{{- define "plant-store.serverLabels" -}}
{{ include "plant-store.labels" . }}
app.kubernetes.io/component: server
{{- end }}

{{/* Selector labels of the app pods. */}}
{{- define "plant-store.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plant-store.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/* Selector labels of the bundled PostgreSQL pod. */}}
{{- define "plant-store.postgresql.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plant-store.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: postgresql
{{- end }}

{{- define "plant-store.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "plant-store.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image tag: a version, never "latest" (seed: rolling updates replace the version tag). */}}
{{- define "plant-store.imageTag" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag | toString }}
{{- if eq (lower $tag) "latest" }}
{{- fail "plant-store: image.tag \"latest\" is not allowed; set image.tag to a release version such as 1.1.0 (rolling updates change the version tag)" }}
{{- end }}
{{- $tag }}
{{- end }}

{{/* Which database the app uses: "bundled", "external" or "embedded" (SQLite in /app/data). */}}
{{- define "plant-store.databaseMode" -}}
{{- if or .Values.database.url .Values.database.existingSecret }}external
{{- else if .Values.postgresql.enabled }}bundled
{{- else }}embedded
{{- end }}
{{- end }}

{{/* The app's replica count is more than one (fixed or by the autoscaler). */}}
{{- define "plant-store.multiReplica" -}}
{{- if or .Values.autoscaling.enabled (gt (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}

{{/*
Refuse settings that cannot work. Included by the Deployment so every render checks them.
- The embedded SQLite store holds a write lock on /app/data: several pods never share it.
- The agent needs both its server URL and its token, or neither.
- Webhook workers apart from the API need PostgreSQL: the embedded store allows one process.
*/}}
{{- define "plant-store.validate" -}}
{{- if and .Values.webhook.worker.enabled (eq (include "plant-store.databaseMode" .) "embedded") }}
{{- fail "plant-store: webhook.worker.enabled needs PostgreSQL (postgresql.enabled=true, database.url or database.existingSecret), because with the embedded SQLite store one process writes and delivers the webhook." }}
{{- end }}
{{- if and (eq (include "plant-store.databaseMode" .) "embedded") (include "plant-store.multiReplica" .) }}
{{- fail "plant-store: the embedded SQLite store (postgresql.enabled=false and no database.url or database.existingSecret) cannot be shared by several replicas: one writer holds a lock on the data volume. Set replicaCount=1 and autoscaling.enabled=false, or use PostgreSQL (postgresql.enabled=true or database.url / database.existingSecret)." }}
{{- end }}
{{- if and (or .Values.database.url .Values.database.existingSecret) .Values.postgresql.enabled }}
{{- fail "plant-store: an external database (database.url or database.existingSecret) is set while the bundled PostgreSQL is on; set postgresql.enabled=false." }}
{{- end }}
{{- $agentToken := or .Values.agent.token .Values.agent.existingSecret }}
{{- if and .Values.agent.serverUrl (not $agentToken) }}
{{- fail "plant-store: agent.serverUrl is set without agent.token or agent.existingSecret; the agent needs both or neither." }}
{{- end }}
{{- if and $agentToken (not .Values.agent.serverUrl) }}
{{- fail "plant-store: agent.token or agent.existingSecret is set without agent.serverUrl; the agent needs both or neither." }}
{{- end }}
{{- $webhookSecrets := or .Values.webhook.secrets .Values.webhook.existingSecret }}
{{- if and .Values.webhook.urls (not $webhookSecrets) }}
{{- fail "plant-store: webhook.urls is set without webhook.secrets or webhook.existingSecret; every receiver needs a signing secret." }}
{{- end }}
{{- if and .Values.webhook.secrets (not .Values.webhook.existingSecret) (ne (len .Values.webhook.secrets) (len .Values.webhook.urls)) }}
{{- fail "plant-store: webhook.secrets needs one entry per webhook.urls entry." }}
{{- end }}
{{- $budget := int (include "plant-store.connectionBudget" .) }}
{{- $limit := int .Values.database.maxConnections }}
{{- if and (eq (include "plant-store.databaseMode" .) "external") (gt $limit 0) (gt $budget $limit) }}
{{- fail (printf "plant-store: the pods may open %d PostgreSQL connections (database.poolSize per process, plus one LISTEN per delivering process, for the most API pods, one surge pod and the webhook workers) but database.maxConnections is %d; lower database.poolSize or autoscaling.maxReplicas, or raise the server's max_connections." $budget $limit) }}
{{- end }}
{{- $ports := list (int .Values.ports.api) (int .Values.ports.health) (int .Values.ports.metrics) }}
{{- if ne (len (uniq $ports)) 3 }}
{{- fail "plant-store: ports.api, ports.health and ports.metrics must differ." }}
{{- end }}
{{- end }}

{{/* Name of the Secret made by the chart (API tokens, agent token, database URL). */}}
{{- define "plant-store.secretName" -}}
{{- include "plant-store.fullname" . }}
{{- end }}

{{/*
API tokens: from values, else kept from the Secret of a previous release (lookup), else a new
random token. lookup is empty under `helm template`; set auth.apiTokens for GitOps.
*/}}
{{- define "plant-store.apiTokens" -}}
{{- if .Values.auth.apiTokens }}
{{- join "," .Values.auth.apiTokens }}
{{- else }}
{{- $old := lookup "v1" "Secret" .Release.Namespace (include "plant-store.secretName" .) }}
{{- if and $old $old.data (hasKey $old.data "api-tokens") }}
{{- index $old.data "api-tokens" | b64dec }}
{{- else }}
{{- randAlphaNum 48 }}
{{- end }}
{{- end }}
{{- end }}

{{/* Password of the bundled PostgreSQL: from values, else kept from the previous release, else random. */}}
{{- define "plant-store.postgresql.password" -}}
{{- if .Values.postgresql.auth.password }}
{{- .Values.postgresql.auth.password }}
{{- else }}
{{- $old := lookup "v1" "Secret" .Release.Namespace (include "plant-store.postgresql.fullname" .) }}
{{- if and $old $old.data (hasKey $old.data "password") }}
{{- index $old.data "password" | b64dec }}
{{- else }}
{{- randAlphaNum 32 }}
{{- end }}
{{- end }}
{{- end }}

{{- define "plant-store.postgresql.secretName" -}}
{{- default (include "plant-store.postgresql.fullname" .) .Values.postgresql.auth.existingSecret }}
{{- end }}

{{- define "plant-store.postgresql.secretKey" -}}
{{- if .Values.postgresql.auth.existingSecret }}{{ .Values.postgresql.auth.existingSecretKey }}{{ else }}password{{ end }}
{{- end }}

{{/*
HPA API version: autoscaling/v2 is served from Kubernetes 1.23 (1.19 has only v2beta2, which
1.26 removed). `helm template` lists every group/version it knows whatever --kube-version says,
so the version check is needed besides .Capabilities.APIVersions (which holds "group/version"
both offline and on a cluster; "group/version/Kind" only on a cluster).
*/}}
{{- define "plant-store.hpa.apiVersion" -}}
{{- if .Values.autoscaling.apiVersion }}
{{- .Values.autoscaling.apiVersion }}
{{- else if and (.Capabilities.APIVersions.Has "autoscaling/v2") (semverCompare ">=1.23.0-0" .Capabilities.KubeVersion.Version) }}
{{- "autoscaling/v2" }}
{{- else }}
{{- "autoscaling/v2beta2" }}
{{- end }}
{{- end }}

{{/* PDB API version: policy/v1 from Kubernetes 1.21, policy/v1beta1 before (removed in 1.25). */}}
{{- define "plant-store.pdb.apiVersion" -}}
{{- if .Values.podDisruptionBudget.apiVersion }}
{{- .Values.podDisruptionBudget.apiVersion }}
{{- else if and (.Capabilities.APIVersions.Has "policy/v1") (semverCompare ">=1.21.0-0" .Capabilities.KubeVersion.Version) }}
{{- "policy/v1" }}
{{- else }}
{{- "policy/v1beta1" }}
{{- end }}
{{- end }}

{{/* storageClassName line: empty = cluster default (omitted), "-" = no class. */}}
{{- define "plant-store.storageClass" -}}
{{- if . }}
{{- if eq "-" . }}
storageClassName: ""
{{- else }}
storageClassName: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The relay server (relayServer.*): names, labels and the settings it refuses. */}}
{{- define "plant-store.relay.fullname" -}}
{{- printf "%s-relay" (include "plant-store.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "plant-store.relay.labels" -}}
{{ include "plant-store.labels" . }}
app.kubernetes.io/component: relay-server
{{- end }}

{{- define "plant-store.relay.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plant-store.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: relay-server
{{- end }}

{{/* The relay shares state in Redis: a URL or an existing Secret holding one is set. */}}
{{- define "plant-store.relay.redis" -}}
{{- with .Values.relayServer.redis }}{{ if or .url .existingSecret }}true{{ end }}{{ end }}
{{- end }}

{{/* The fewest relay pods: the HPA's floor when it owns the count, else relayServer.replicas. */}}
{{- define "plant-store.relay.fewestReplicas" -}}
{{- with .Values.relayServer }}{{ if .autoscaling.enabled }}{{ .autoscaling.minReplicas }}{{ else }}{{ .replicas }}{{ end }}{{ end }}
{{- end }}

{{/* More than one relay pod may run: several replicas, or an HPA that may add them. */}}
{{- define "plant-store.relay.multiReplica" -}}
{{- with .Values.relayServer }}{{ if or .autoscaling.enabled (gt (int .replicas) 1) }}true{{ end }}{{ end }}
{{- end }}

{{- define "plant-store.relay.redisSecretName" -}}
{{- default (printf "%s-redis" (include "plant-store.relay.fullname" .)) .Values.relayServer.redis.existingSecret }}
{{- end }}

{{- define "plant-store.relay.secretName" -}}
{{- default (include "plant-store.relay.fullname" .) .Values.relayServer.existingSecret }}
{{- end }}

{{/* RELAY_AGENTS: {"<agent>": "<entry>,<entry>"}, the server's format, from lists of entries. */}}
{{- define "plant-store.relay.agentsJson" -}}
{{- $agents := dict }}
{{- range $name, $tokens := .Values.relayServer.agents }}
{{- $_ := set $agents $name (join "," $tokens) }}
{{- end }}
{{- $agents | toJson }}
{{- end }}

{{/* RELAY_CLIENTS: {"<client>": {"tokens": "<entry>,<entry>", "agents": [...]}}. */}}
{{- define "plant-store.relay.clientsJson" -}}
{{- $clients := dict }}
{{- range $name, $client := .Values.relayServer.clients }}
{{- $_ := set $clients $name (dict "tokens" (join "," $client.tokens) "agents" $client.agents) }}
{{- end }}
{{- $clients | toJson }}
{{- end }}

{{/*
Refuse relay settings that cannot start (the relay would exit 78 in a crash loop):
- no agents, or neither clients nor an OAuth issuer, and no existing Secret to take them from;
- an OAuth issuer without the public URL its tokens' audience names;
- a client that names an agent the values do not define;
- equal ports;
- several replicas, or an HPA, without Redis (each would hold its own agents and sessions).
*/}}
{{- define "plant-store.relay.validate" -}}
{{- $r := .Values.relayServer }}
{{- if and (not $r.existingSecret) (or (not $r.agents) (and (not $r.clients) (not $r.oauth.issuer))) }}
{{- fail "plant-store: relayServer.enabled needs relayServer.agents and relayServer.clients or relayServer.oauth.issuer (or relayServer.existingSecret holding RELAY_AGENTS and RELAY_CLIENTS)." }}
{{- end }}
{{- if and $r.oauth.issuer (not $r.oauth.publicUrl) }}
{{- fail "plant-store: relayServer.oauth.issuer needs relayServer.oauth.publicUrl (the tokens' audience)." }}
{{- end }}
{{- if not $r.existingSecret }}
{{- range $name, $client := $r.clients }}
{{- range $client.agents }}
{{- if not (hasKey $r.agents .) }}
{{- fail (printf "plant-store: relayServer.clients.%s.agents names %q, which is not in relayServer.agents." $name .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- $ports := list (int $r.ports.relay) (int $r.ports.health) (int $r.ports.metrics) }}
{{- if ne (len (uniq $ports)) 3 }}
{{- fail "plant-store: relayServer.ports.relay, .health and .metrics must differ." }}
{{- end }}
{{- if and (gt (int $r.replicas) 1) (not (include "plant-store.relay.redis" .)) }}
{{- fail "plant-store: relayServer.replicas greater than 1 needs Redis (relayServer.redis.url or relayServer.redis.existingSecret), because without it each replica keeps its own agent connections and sessions in memory and a client's request would miss the replica holding its agent." }}
{{- end }}
{{- if and $r.autoscaling.enabled (not (include "plant-store.relay.redis" .)) }}
{{- fail "plant-store: relayServer.autoscaling.enabled needs Redis (relayServer.redis.url or relayServer.redis.existingSecret), because the replicas it adds would each keep their own agent connections and sessions in memory and a client's request would miss the replica holding its agent." }}
{{- end }}
{{- end }}

{{/* Env of the webhook receivers (URLs, signing secrets, retries): the API and worker pods. */}}
{{- define "plant-store.webhookEnv" -}}
{{- if .Values.webhook.urls }}
- name: WEBHOOK_URLS
  value: {{ join "," .Values.webhook.urls | quote }}
- name: WEBHOOK_SECRETS
  valueFrom:
    secretKeyRef:
      {{- if .Values.webhook.existingSecret }}
      name: {{ .Values.webhook.existingSecret }}
      key: {{ .Values.webhook.existingSecretKey }}
      {{- else }}
      name: {{ include "plant-store.secretName" . }}
      key: webhook-secrets
      {{- end }}
{{- with .Values.webhook.retryScheduleSeconds }}
- name: WEBHOOK_RETRY_SCHEDULE_SECONDS
  value: {{ join "," . | quote }}
{{- end }}
{{- if .Values.webhook.allowPrivateAddresses }}
- name: WEBHOOK_ALLOW_PRIVATE_ADDRESSES
  value: "true"
{{- end }}
{{- end }}
{{- end }}

{{/*
The most PostgreSQL connections the release's pods open at once: each process's pool
(database.poolSize), plus one LISTEN connection where webhooks are delivered, for the most API
pods the replica count or HPA allows and the webhook workers, each with one rolling-update surge.
*/}}
{{- define "plant-store.connectionBudget" -}}
{{- $pool := int .Values.database.poolSize }}
{{- $apiPods := ternary (int .Values.autoscaling.maxReplicas) (int .Values.replicaCount) .Values.autoscaling.enabled }}
{{- $worker := .Values.webhook.worker }}
{{- if $worker.enabled }}
{{- add (mul (add $apiPods 1) $pool) (mul (add (int $worker.replicas) 1) (add $pool 1)) }}
{{- else }}
{{- mul (add $apiPods 1) (add $pool 1) }}
{{- end }}
{{- end }}

{{/* Env of the database (external URL, or the bundled one's URL and password): API and workers. */}}
{{- define "plant-store.databaseEnv" -}}
{{- $dbMode := include "plant-store.databaseMode" . }}
{{- if ne $dbMode "embedded" }}
- name: DATABASE_POOL_MAX
  value: {{ .Values.database.poolSize | quote }}
{{- end }}
{{- if eq $dbMode "external" }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- if .Values.database.existingSecret }}
      name: {{ .Values.database.existingSecret }}
      key: {{ .Values.database.existingSecretKey }}
      {{- else }}
      name: {{ include "plant-store.secretName" . }}
      key: database-url
      {{- end }}
{{- else if eq $dbMode "bundled" }}
# The PostgreSQL client reads the password from PGPASSWORD when the URL has none, so
# any character works (a password pasted into the URL would need escaping).
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "plant-store.postgresql.secretName" . }}
      key: {{ include "plant-store.postgresql.secretKey" . }}
- name: DATABASE_URL
  value: "postgres://{{ .Values.postgresql.auth.username }}@{{ include "plant-store.postgresql.fullname" . }}:{{ .Values.postgresql.port }}/{{ .Values.postgresql.auth.database }}"
{{- end }}
{{- end }}

{{/* The webhook workers (webhook.worker.*): names and labels. */}}
{{- define "plant-store.worker.fullname" -}}
{{- printf "%s-webhook-worker" (include "plant-store.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "plant-store.worker.labels" -}}
{{ include "plant-store.labels" . }}
app.kubernetes.io/component: webhook-worker
{{- end }}

{{- define "plant-store.worker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "plant-store.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook-worker
{{- end }}
