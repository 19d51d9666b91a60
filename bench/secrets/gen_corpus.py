#!/usr/bin/env python3
"""Generate a labeled secrets-scanner corpus (standard library only).

    python3 gen_corpus.py OUT_DIR [--seed N] [--secrets 420] [--decoys 420]

Writes a realistic-looking repository tree under OUT_DIR containing FAKE
secrets in their real formats (prefixes, lengths, alphabets, and valid
CRC32/base62 checksums for GitHub and npm tokens) and hard decoys, plus:

  OUT_DIR/labels.jsonl  one line per planted secret
  OUT_DIR/decoys.jsonl  one line per planted decoy (type = decoy class)

Each line: {"file": "rel/path", "line": N, "type": "...", "value_sha256": "..."}
Multi-line credentials also carry "end_line" (and "start_line" when the block
starts before `line`): PEM blocks span BEGIN..END (line = BEGIN line); a GCP
service-account JSON spans the whole object (line = its private_key line).
Any line in [start_line or line, end_line or line] counts as a hit.  value_sha256 is the SHA-256 of the planted
value (unescaped).  Line numbers are 1-based.  Output is deterministic for a
given seed.  No value here is a real credential: all are random.
"""
import argparse
import base64
import hashlib
import json
import os
import random
import string
import zlib

B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
UPPER_NUM = string.ascii_uppercase + string.digits
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"

R = random.Random(0)  # reseeded in main()


def rs(alphabet, n):
    return "".join(R.choice(alphabet) for _ in range(n))


def b62(n):
    s = ""
    while n:
        n, r = divmod(n, 62)
        s = B62[r] + s
    return s.rjust(6, "0")


def crc_token(prefix, body_len, valid=True):
    body = rs(ALNUM, body_len)
    chk = b62(zlib.crc32(body.encode()) & 0xFFFFFFFF)
    if not valid:
        while True:
            bad = rs(ALNUM, 6)
            if bad != chk:
                chk = bad
                break
    return prefix + body + chk


def github_fine_grained():
    # github_pat_ + 22 + "_" + 59 alphanumerics; real fine-grained tokens carry no checksum
    # (tests/fixtures/secrets/real_world/), unlike the classic ghp_/gho_/... ones
    return "github_pat_" + rs(ALNUM, 22) + "_" + rs(ALNUM, 59)


def b64e(data):
    return base64.b64encode(data).decode()


def b64u(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def rand_b64_bytes(n):
    return b64e(bytes(R.getrandbits(8) for _ in range(n)))


def uuid4():
    h = rs(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{R.choice('89ab')}{h[17:20]}-{h[20:]}"


WORDS = ("alpha beta gamma delta orders billing invoice customer account report "
         "worker queue cache session user profile metrics export import sync batch "
         "retry timeout handler service client server config loader parser render "
         "payment shipping catalog search index vendor region cluster node backup "
         "archive ledger audit event stream topic schedule job task pipeline stage").split()
NAMES = "alice bob carol dave erin frank grace heidi ivan judy mallory oscar peggy trent".split()
HOSTS = ["db.internal", "db-prod.acme-corp.net", "10.0.3.17", "pg.staging.example.net",
         "mysql-1.svc.cluster.local", "cache.acme-corp.io", "mq.acme-corp.io"]


def word():
    return R.choice(WORDS)


def pw_strong(n=None):
    n = n or R.randint(14, 24)
    alphabet = ALNUM + "!%^&*-_+=~"
    while True:
        p = rs(alphabet, n)
        if any(c.isdigit() for c in p) and any(c.isupper() for c in p) and any(c in "!%^&*-_+=~" for c in p):
            return p


def pw_url():  # URL-safe password
    return rs(ALNUM, R.randint(14, 22)) + R.choice(["", "9", "x7", "Q2"])


# --------------------------------------------------------------------------
# Secret types: name -> (generator, KEY names).  Generators return the value.
# --------------------------------------------------------------------------

def pem_body(nbytes):
    raw = rand_b64_bytes(nbytes)
    return [raw[i:i + 64] for i in range(0, len(raw), 64)]


def pem(kind):
    if kind == "rsa":
        lines = ["-----BEGIN RSA PRIVATE KEY-----"] + pem_body(1190) + ["-----END RSA PRIVATE KEY-----"]
    elif kind == "ec":
        lines = ["-----BEGIN EC PRIVATE KEY-----"] + pem_body(121) + ["-----END EC PRIVATE KEY-----"]
    elif kind == "openssh":
        lines = ["-----BEGIN OPENSSH PRIVATE KEY-----",
                 ] + [(b64e(b"openssh-key-v1\x00") + rand_b64_bytes(380))[i:i + 70]
                      for i in range(0, 520, 70)] + ["-----END OPENSSH PRIVATE KEY-----"]
    elif kind == "pkcs8":
        lines = ["-----BEGIN PRIVATE KEY-----"] + ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + rand_b64_bytes(24)] + pem_body(1150) + ["-----END PRIVATE KEY-----"]
    elif kind == "encrypted":
        lines = ["-----BEGIN ENCRYPTED PRIVATE KEY-----"] + pem_body(1250) + ["-----END ENCRYPTED PRIVATE KEY-----"]
    else:  # pgp
        lines = ["-----BEGIN PGP PRIVATE KEY BLOCK-----", "", "lQdGBGX" + rand_b64_bytes(44)] + pem_body(900) + ["=" + rand_b64_bytes(3), "-----END PGP PRIVATE KEY BLOCK-----"]
    return "\n".join(lines)


def jwt():
    alg = R.choice(["HS256", "RS256", "ES256", "HS512"])
    hdr = {"alg": alg, "typ": "JWT"}
    if R.random() < 0.6:
        hdr["kid"] = rs(HEX, 16)
    now = 1700000000 + R.randint(0, 30000000)
    pl = {"sub": str(R.randint(10000, 99999999)), "iat": now, "exp": now + R.choice([3600, 86400, 2592000]),
          "iss": R.choice(["https://auth.acme-corp.io", "api-gateway", "urn:acme:idp"]),
          "scope": R.choice(["read write", "admin", "repo:read", "orders:*"])}
    if R.random() < 0.5:
        pl["email"] = R.choice(NAMES) + "@acme-corp.io"
    siglen = {"HS256": 32, "RS256": 256, "ES256": 64, "HS512": 64}[alg]
    return b64u(json.dumps(hdr, separators=(",", ":")).encode()) + "." + \
        b64u(json.dumps(pl, separators=(",", ":")).encode()) + "." + \
        b64u(bytes(R.getrandbits(8) for _ in range(siglen)))


def gcp_private_key():
    return pem("pkcs8").replace("-----END PRIVATE KEY-----", "-----END PRIVATE KEY-----\n")


def mapbox():
    pl = b64u(json.dumps({"u": R.choice(NAMES) + rs(string.digits, 2), "a": rs(ALNUM, 20)}, separators=(",", ":")).encode())
    return "sk." + pl + "." + rs(B64URL, 22)


def sentry_token():
    pl = b64u(json.dumps({"iat": 1700000000 + R.randint(0, 9999999), "url": "https://sentry.io",
                          "region_url": "https://us.sentry.io", "org": word() + "-" + rs(HEX, 4)},
                         separators=(",", ":")).encode())
    return "sntrys_" + pl + "_" + rs(B64URL, 43)


def grafana_cloud():
    pl = b64e(json.dumps({"o": str(R.randint(100000, 999999)), "n": "stack-" + word() + "-token",
                          "k": rs(ALNUM, 24), "m": {"r": "prod-us-east-0"}}, separators=(",", ":")).encode()).rstrip("=")
    return "glc_" + pl


def provider_token_b64():
    inner = R.choice([lambda: crc_token("ghp_", 30), lambda: "sk_live_" + rs(ALNUM, 24),
                      lambda: "xoxb-" + rs(string.digits, 12) + "-" + rs(string.digits, 13) + "-" + rs(ALNUM, 24),
                      lambda: "glpat-" + rs(B64URL, 20)])()
    return b64e(inner.encode())


# type -> (value generator, [KEY names], host constraint or None)
T = {}


def st(name, gen, keys, host=None):
    T[name] = (gen, keys, host)


st("aws-access-key-id", lambda: "AKIA" + rs("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), ["AWS_ACCESS_KEY_ID", "aws_access_key_id", "S3_ACCESS_KEY"])
st("aws-secret-access-key", lambda: rs(ALNUM + "/+", 40), ["AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"])
st("aws-session-token", lambda: "IQoJb3JpZ2luX2Vj" + rs(B64, R.randint(300, 420)) + "==", ["AWS_SESSION_TOKEN", "aws_session_token"])
st("gcp-api-key", lambda: "AIza" + rs(B64URL, 35), ["GOOGLE_API_KEY", "MAPS_API_KEY", "firebase_api_key"])
st("gcp-service-account", gcp_private_key, ["private_key"], host="gcp_sa")
st("azure-storage-account-key", lambda: rand_b64_bytes(64), ["AZURE_STORAGE_KEY", "azure_storage_account_key", "AccountKey"])
st("azure-storage-connection-string", lambda: f"DefaultEndpointsProtocol=https;AccountName={word()}{rs(string.digits, 3)}sa;AccountKey={rand_b64_bytes(64)};EndpointSuffix=core.windows.net",
   ["AZURE_STORAGE_CONNECTION_STRING", "azure_connection_string"])
st("github-pat", lambda: crc_token("ghp_", 30), ["GITHUB_TOKEN", "GH_TOKEN", "github_token"])
st("github-fine-grained-pat", github_fine_grained, ["GITHUB_PAT", "GH_PAT", "github_pat"])
st("github-oauth", lambda: crc_token("gho_", 30), ["GITHUB_OAUTH_TOKEN", "gh_oauth_token"])
st("github-user-to-server", lambda: crc_token("ghu_", 30), ["GITHUB_APP_USER_TOKEN", "ghu_token"])
st("github-app-token", lambda: crc_token("ghs_", 30), ["GITHUB_APP_TOKEN", "installation_token"])
st("github-refresh-token", lambda: crc_token("ghr_", 30) + rs(ALNUM, 40), ["GITHUB_REFRESH_TOKEN", "refresh_token"])
st("gitlab-pat", lambda: "glpat-" + rs(B64URL, 20), ["GITLAB_TOKEN", "GL_TOKEN", "gitlab_private_token"])
st("gitlab-pipeline-trigger", lambda: "glptt-" + rs(HEX, 40), ["GITLAB_TRIGGER_TOKEN", "trigger_token"])
st("gitlab-runner-token", lambda: "glrt-" + rs(B64URL, 20), ["RUNNER_TOKEN", "runner_token"])
st("gitlab-deploy-token", lambda: "gldt-" + rs(B64URL, 20), ["GITLAB_DEPLOY_TOKEN", "deploy_token"])
st("bitbucket-app-password", lambda: "ATBB" + rs(ALNUM, 24) + rs(HEX.upper(), 8), ["BITBUCKET_APP_PASSWORD", "bitbucket_password"])
st("slack-bot-token", lambda: f"xoxb-{rs(string.digits, 12)}-{rs(string.digits, 13)}-{rs(ALNUM, 24)}", ["SLACK_BOT_TOKEN", "slack_token"])
st("slack-user-token", lambda: f"xoxp-{rs(string.digits, 12)}-{rs(string.digits, 12)}-{rs(string.digits, 13)}-{rs(HEX, 32)}", ["SLACK_USER_TOKEN", "slack_user_token"])
st("slack-app-token", lambda: f"xapp-1-A{rs(UPPER_NUM, 10)}-{rs(string.digits, 13)}-{rs(HEX, 64)}", ["SLACK_APP_TOKEN", "slack_app_token"])
st("slack-webhook", lambda: f"https://hooks.slack.com/services/T{rs(UPPER_NUM, 10)}/B{rs(UPPER_NUM, 10)}/{rs(ALNUM, 24)}", ["SLACK_WEBHOOK_URL", "slack_webhook"])
st("discord-bot-token", lambda: b64u(str(R.randint(10**17, 10**18 - 1)).encode()) + "." + rs(B64URL, 6) + "." + rs(B64URL, 38), ["DISCORD_BOT_TOKEN", "discord_token"])
st("discord-webhook", lambda: f"https://discord.com/api/webhooks/{R.randint(10**17, 10**18 - 1)}/{rs(B64URL, 68)}", ["DISCORD_WEBHOOK_URL", "discord_webhook"])
st("telegram-bot-token", lambda: f"{R.randint(10**8, 10**10 - 1)}:AA{rs(B64URL, 33)}", ["TELEGRAM_BOT_TOKEN", "telegram_token"])
st("teams-webhook", lambda: f"https://{word()}corp.webhook.office.com/webhookb2/{uuid4()}@{uuid4()}/IncomingWebhook/{rs(HEX, 32)}/{uuid4()}", ["TEAMS_WEBHOOK_URL", "teams_webhook"])
st("twilio-api-key", lambda: "SK" + rs(HEX, 32), ["TWILIO_API_KEY", "twilio_api_key"])
st("sendgrid-api-key", lambda: "SG." + rs(B64URL, 22) + "." + rs(B64URL, 43), ["SENDGRID_API_KEY", "sendgrid_key"])
st("mailgun-api-key", lambda: "key-" + rs(HEX, 32), ["MAILGUN_API_KEY", "mailgun_api_key"])
st("mailchimp-api-key", lambda: rs(HEX, 32) + "-us" + str(R.randint(1, 21)), ["MAILCHIMP_API_KEY", "mailchimp_key"])
st("stripe-secret-key", lambda: "sk_live_" + R.choice([rs(ALNUM, 24), "51" + rs(ALNUM, 97)]), ["STRIPE_SECRET_KEY", "stripe_api_key"])
st("stripe-restricted-key", lambda: "rk_live_" + R.choice([rs(ALNUM, 24), "51" + rs(ALNUM, 97)]), ["STRIPE_RESTRICTED_KEY", "stripe_rk"])
st("stripe-webhook-secret", lambda: "whsec_" + rs(ALNUM, 32), ["STRIPE_WEBHOOK_SECRET", "webhook_secret"])
st("square-access-token", lambda: "EAAA" + rs(B64URL, 60), ["SQUARE_ACCESS_TOKEN", "square_token"])
st("shopify-access-token", lambda: R.choice(["shpat_", "shpca_", "shppa_", "shpss_"]) + rs(HEX, 32), ["SHOPIFY_ACCESS_TOKEN", "shopify_token"])
st("braintree-access-token", lambda: f"access_token$production${rs(string.ascii_lowercase + string.digits, 16)}${rs(HEX, 32)}", ["BRAINTREE_ACCESS_TOKEN", "paypal_access_token"])
st("openai-api-key", lambda: "sk-" + rs(ALNUM, 20) + "T3BlbkFJ" + rs(ALNUM, 20), ["OPENAI_API_KEY", "openai_key"])
st("openai-project-key", lambda: "sk-proj-" + rs(B64URL, 74) + "T3BlbkFJ" + rs(B64URL, 74), ["OPENAI_API_KEY", "OPENAI_KEY"])
st("anthropic-api-key", lambda: "sk-ant-api03-" + rs(B64URL, 93) + "AA", ["ANTHROPIC_API_KEY", "anthropic_key"])
st("huggingface-token", lambda: "hf_" + rs(string.ascii_letters, 34), ["HF_TOKEN", "HUGGINGFACE_TOKEN"])
st("cohere-api-key", lambda: rs(ALNUM, 40), ["COHERE_API_KEY", "cohere_api_key", "CO_API_KEY"])
st("groq-api-key", lambda: "gsk_" + rs(ALNUM, 52), ["GROQ_API_KEY", "groq_key"])
st("replicate-api-token", lambda: "r8_" + rs(ALNUM, 37), ["REPLICATE_API_TOKEN", "replicate_token"])
st("npm-token", lambda: crc_token("npm_", 30), ["NPM_TOKEN", "npm_token", "_authToken"])
st("pypi-token", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(B64URL, R.randint(140, 180)), ["PYPI_TOKEN", "TWINE_PASSWORD", "pypi_token"])
st("rubygems-api-key", lambda: "rubygems_" + rs(HEX, 48), ["GEM_HOST_API_KEY", "rubygems_api_key"])
st("nuget-api-key", lambda: "oy2" + rs(string.ascii_lowercase + string.digits, 43), ["NUGET_API_KEY", "nuget_key"])
st("dockerhub-pat", lambda: "dckr_pat_" + rs(B64URL, 27), ["DOCKERHUB_TOKEN", "DOCKER_PASSWORD"])
st("docker-config-auth", lambda: b64e(f"{R.choice(NAMES)}{rs(string.digits, 2)}:{pw_url()}".encode()), ["auth"], host="docker_config")
st("heroku-api-key", lambda: R.choice(["HRKU-AA" + rs(B64URL, 58), uuid4()]), ["HEROKU_API_KEY", "heroku_api_key"])
st("digitalocean-token", lambda: "dop_v1_" + rs(HEX, 64), ["DIGITALOCEAN_TOKEN", "DO_TOKEN"])
st("linear-api-key", lambda: "lin_api_" + rs(ALNUM, 40), ["LINEAR_API_KEY", "linear_key"])
st("notion-token", lambda: R.choice(["secret_" + rs(ALNUM, 43), "ntn_" + rs(string.digits, 11) + rs(ALNUM, 35)]), ["NOTION_TOKEN", "notion_api_key"])
st("atlassian-api-token", lambda: "ATATT3xFfGF0" + rs(B64URL, 170) + "=" + rs(HEX.upper(), 8), ["JIRA_API_TOKEN", "ATLASSIAN_API_TOKEN", "confluence_token"])
st("datadog-api-key", lambda: rs(HEX, 32), ["DD_API_KEY", "DATADOG_API_KEY", "datadog_api_key"])
st("newrelic-user-key", lambda: "NRAK-" + rs(UPPER_NUM, 27), ["NEW_RELIC_API_KEY", "newrelic_api_key"])
st("sentry-auth-token", sentry_token, ["SENTRY_AUTH_TOKEN", "sentry_token"])
st("sentry-dsn", lambda: f"https://{rs(HEX, 32)}@o{R.randint(100000, 999999)}.ingest.sentry.io/{R.randint(1000000, 9999999)}", ["SENTRY_DSN", "sentry_dsn"])
st("okta-api-token", lambda: "00" + rs(B64URL, 40), ["OKTA_API_TOKEN", "okta_token"])
st("doppler-token", lambda: "dp.pt." + rs(ALNUM, 43), ["DOPPLER_TOKEN", "doppler_token"])
st("vault-token", lambda: R.choice(["hvs." + rs(B64URL, 24), "hvs.CAESI" + rs(B64URL, 86)]), ["VAULT_TOKEN", "vault_token"])
st("terraform-cloud-token", lambda: rs(ALNUM, 14) + ".atlasv1." + rs(B64URL, 67), ["TFE_TOKEN", "TF_API_TOKEN", "token"])
st("pulumi-token", lambda: "pul-" + rs(HEX, 40), ["PULUMI_ACCESS_TOKEN", "pulumi_token"])
st("postman-api-key", lambda: "PMAK-" + rs(HEX, 24) + "-" + rs(HEX, 34), ["POSTMAN_API_KEY", "postman_key"])
st("grafana-service-account-token", lambda: "glsa_" + rs(ALNUM, 32) + "_" + rs(HEX, 8), ["GRAFANA_TOKEN", "grafana_sa_token"])
st("grafana-cloud-token", grafana_cloud, ["GRAFANA_CLOUD_TOKEN", "grafana_cloud_api_key"])
st("databricks-token", lambda: "dapi" + rs(HEX, 32) + R.choice(["", "-2", "-3"]), ["DATABRICKS_TOKEN", "databricks_token"])
st("cloudflare-api-token", lambda: rs(B64URL, 40), ["CLOUDFLARE_API_TOKEN", "CF_API_TOKEN", "cloudflare_token"])
st("mapbox-secret-token", mapbox, ["MAPBOX_SECRET_TOKEN", "MAPBOX_DOWNLOADS_TOKEN"])
st("age-secret-key", lambda: "AGE-SECRET-KEY-1" + rs(BECH32, 58), ["AGE_SECRET_KEY", "SOPS_AGE_KEY"])
for _k in ["rsa", "ec", "openssh", "pkcs8", "encrypted", "pgp"]:
    st(f"private-key-{_k}", (lambda k=_k: pem(k)), ["PRIVATE_KEY", "private_key", "ssh_key", "tls_key"], host="pem")
st("jwt", jwt, ["JWT", "ACCESS_TOKEN", "auth_token", "bearer_token"])
st("postgres-url", lambda: f"postgres://{R.choice(['app', 'admin', 'svc_orders'])}:{pw_url()}@{R.choice(HOSTS)}:5432/{word()}", ["DATABASE_URL", "database_url", "PG_DSN"])
st("mysql-url", lambda: f"mysql://{R.choice(['root', 'app', 'wp'])}:{pw_url()}@{R.choice(HOSTS)}:3306/{word()}", ["MYSQL_URL", "DB_URL"])
st("mongodb-url", lambda: f"mongodb+srv://{R.choice(['app', 'atlas-admin'])}:{pw_url()}@cluster{R.randint(0, 9)}.{rs(string.ascii_lowercase + string.digits, 5)}.mongodb.net/{word()}?retryWrites=true&w=majority", ["MONGODB_URI", "mongo_url"])
st("redis-url", lambda: f"redis://default:{pw_url()}@{R.choice(HOSTS)}:6379/0", ["REDIS_URL", "cache_url"])
st("amqp-url", lambda: f"amqp://{R.choice(['guest2', 'app', 'worker'])}:{pw_url()}@{R.choice(HOSTS)}:5672/{word()}", ["AMQP_URL", "BROKER_URL", "CELERY_BROKER_URL"])
st("https-basic-auth-url", lambda: f"https://{R.choice(NAMES)}:{pw_url()}@{R.choice(['nexus', 'artifactory', 'git', 'registry'])}.acme-corp.io/{word()}", ["REPO_URL", "registry_url", "index_url"])
st("k8s-secret", lambda: b64e(pw_strong().encode()), ["password"], host="k8s")
st("generic-password", pw_strong, ["password", "db_password", "DB_PASSWORD", "admin_password", "smtp_password"])
st("generic-api-key", lambda: rs(ALNUM, R.randint(32, 40)), ["api_key", "API_KEY", "apikey", "client_secret", "secret_key"])
st("base64-provider-token", provider_token_b64, ["TOKEN_B64", "encoded_token", "CI_TOKEN_BASE64"])

MULTILINE = {t for t in T if t.startswith("private-key-")}

# --------------------------------------------------------------------------
# Decoys: class -> generator returning (key, value) for assignment, or
# ("RAW", {lang: line}) for language-specific lines.
# --------------------------------------------------------------------------
JWT_IO = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
          "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


def d_aws_example():
    return R.choice([("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"), ("aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                     ("AWS_ACCESS_KEY_ID", "AKIAI44QH8DHBEXAMPLE"), ("aws_secret_access_key", "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY")])


def d_placeholder():
    key = R.choice(["API_KEY", "api_key", "GITHUB_TOKEN", "password", "SLACK_TOKEN", "secret", "STRIPE_SECRET_KEY", "client_secret", "OPENAI_API_KEY"])
    val = R.choice(["<YOUR_API_KEY>", "xxxxxxxxxxxxxxxxxxxxxxxx", "changeme", "your-token-here", "REPLACE_ME", "****", "********",
                    "<insert-token>", "TODO", "sk-...", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "your_api_key_here", "dummy", "CHANGE_ME_IN_PROD",
                    "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx", "AKIAXXXXXXXXXXXXXXXX"])
    return key, val


def d_template():
    key = R.choice(["API_KEY", "token", "GITHUB_TOKEN", "password", "NPM_TOKEN", "DATABASE_URL", "SLACK_WEBHOOK_URL"])
    val = R.choice(["${API_KEY}", "$TOKEN", "{{ secrets.TOKEN }}", "${{ secrets.NPM_TOKEN }}", "{{ .Values.apiKey }}", "%(API_KEY)s",
                    "${env:GITHUB_TOKEN}", "$(cat /run/secrets/token)", "{{ vault_db_password }}", "postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}:5432/app"])
    return key, val


def d_env_lookup():
    v = R.choice(["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "STRIPE_SECRET_KEY", "OPENAI_API_KEY", "DATABASE_URL", "SLACK_BOT_TOKEN", "NPM_TOKEN"])
    low = v.lower()
    return "RAW", {
        "py": f'{low} = os.environ["{v}"]', "js": f"const {low} = process.env.{v};", "ts": f"const {low}: string = process.env.{v} ?? \"\";",
        "go": f'{low} := os.Getenv("{v}")', "java": f'    private final String {low} = System.getenv("{v}");', "rs": f'let {low} = std::env::var("{v}")?;',
        "rb": f"{low} = ENV.fetch('{v}')", "yaml": f"{low}: ${{{v}}}", "gha": f"          {v}: ${{{{ secrets.{v} }}}}",
        "gitlab": f'    {v}: "${v}"', "sh": f'export {v}="${{{v}:?missing}}"', "env": f"{v}=${{{v}}}", "toml": f'{low} = "${{{v}}}"',
        "ini": f"{low} = %({v})s", "dockerfile": f"ARG {v}", "tf": f"  {low} = var.{low}", "md": f"export {v}=\"$(pass show ci/{low})\"",
        "log": f"INFO  config: {low} loaded from env var {v}", "json": ("RAWKV", low, f"${{{v}}}"), "ipynb": f'{low} = os.environ["{v}"]',
    }


def d_funcall():
    k = R.choice(["password", "api_key", "token", "secret", "client_secret"])
    f = R.choice(["get_password()", "vault.read('secret/app')", "load_secret(\"db\")", "keyring.get_password('svc', user)", "fetch_token(session)"])
    return "RAW", {
        "py": f"{k} = {f}", "js": f"const {k} = await {f.replace(chr(39), chr(34))};", "ts": f"const {k} = await {f.replace(chr(39), chr(34))};",
        "go": f"{k}, err := secrets.Get(ctx, \"{k}\")", "java": f"        String {k} = secretClient.getSecret(\"{k}\").getValue();",
        "rs": f"let {k} = vault.read(\"{k}\").await?;", "rb": f"{k} = Vault.logical.read('secret/{k}')", "sh": f"{k}=$(vault kv get -field={k} secret/app)",
        "tf": f"  {k} = data.vault_generic_secret.app.data[\"{k}\"]", "md": f"{k} = get_secret(\"{k}\")", "log": f"DEBUG resolving {k} via secret manager",
        "yaml": f"{k}: !vault secret/app#{k}", "gha": f"          {k.upper()}: ${{{{ steps.vault.outputs.{k} }}}}", "gitlab": f"    {k.upper()}: $VAULT_{k.upper()}",
        "env": f"{k.upper()}=", "toml": f'{k}_command = "pass show {k}"', "ini": f"{k}_file = /run/secrets/{k}", "dockerfile": f"RUN --mount=type=secret,id={k} ./configure",
        "json": ("RAWKV", k + "_source", "vault:secret/app"), "ipynb": f"{k} = getpass.getpass('{k}: ')",
    }


def d_type_annot():
    k = R.choice(["password", "api_key", "access_token", "secret_key", "private_key"])
    return "RAW", {
        "py": f"    {k}: str", "ts": f"  {k}: string;", "js": f" * @param {{string}} {k} - the {k.replace('_', ' ')}", "go": f"\t{k.title().replace('_', '')} string `json:\"{k}\"`",
        "java": f"    private String {k};", "rs": f"    pub {k}: Option<String>,", "rb": f"  attr_accessor :{k}", "md": f"| `{k}` | string | required |",
        "yaml": f"    {k}:\n      type: string", "tf": f"variable \"{k}\" {{ type = string\n  sensitive = true }}", "toml": f"# {k}: string",
        "ini": f"; {k} = <string>", "env": f"# {k.upper()}: string", "sh": f"# {k}: string", "gha": f"          # {k}: string", "gitlab": f"# {k}: string", "dockerfile": f"# {k}: string",
        "log": f"WARN  missing field {k}: string", "json": ("RAWKV", k + "_type", "string"), "ipynb": f"{k}: str = None",
    }


def d_var_name_only():
    v = R.choice(["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "STRIPE_API_KEY", "SLACK_WEBHOOK_URL", "PRIVATE_KEY", "DB_PASSWORD"])
    return "RAW", {
        "py": f'REQUIRED_ENV = ["{v}", "APP_ENV"]', "js": f'const REQUIRED = ["{v}", "NODE_ENV"];', "ts": f'const REQUIRED: string[] = ["{v}"];',
        "go": f'var requiredEnv = []string{{"{v}", "APP_ENV"}}', "java": f'    static final String ENV_NAME = "{v}";', "rs": f'const ENV_NAME: &str = "{v}";',
        "rb": f"REQUIRED = %w[{v} RACK_ENV]", "md": f"Set `{v}` in your environment before running.", "yaml": f"    - {v}",
        "env": f"{v}=", "sh": f'[ -n "${v}" ] || {{ echo "{v} is not set"; exit 1; }}', "gha": f"        # requires {v}", "gitlab": f"    - echo checking {v}",
        "tf": f'  sensitive_env = ["{v}"]', "toml": f'required = ["{v}"]', "ini": f"required_env = {v}", "dockerfile": f"# pass {v} at runtime",
        "log": f"ERROR environment variable {v} not set", "json": ("RAWKV", "required_env", v), "ipynb": f'assert "{v}" in os.environ',
    }


def d_low_entropy():
    return R.choice(["password", "test_password", "db_password", "PASSWORD"]), R.choice(["password", "test", "test123", "secret", "admin", "hunter2", "password123", "letmein", "123456", "pass"])


def d_git_sha():
    return R.choice(["commit", "GIT_SHA", "revision", "base_ref", "sha"]), rs(HEX, 40)


def d_sha256():
    return R.choice(["checksum", "sha256", "digest", "expected_hash", "content_sha256"]), R.choice(["", "sha256:"]) + rs(HEX, 64)


def d_uuid():
    return R.choice(["request_id", "tenant_id", "correlation_id", "project_id", "client_id", "subscription_id"]), uuid4()


def d_integrity():
    return "integrity", "sha512-" + rand_b64_bytes(64)


def d_b64_text():
    txt = R.choice(["hello world, this is a test fixture", "The quick brown fox jumps over the lazy dog",
                    "Lorem ipsum dolor sit amet, consectetur adipiscing elit", "{\"feature\": \"dark-mode\", \"enabled\": true}",
                    "user-agent: acme-crawler/1.0 (+https://acme-corp.io/bot)", "banner: Welcome to the staging environment"])
    return R.choice(["payload", "fixture_b64", "banner", "encoded_config", "message_body"]), b64e(txt.encode())


def d_bad_checksum():
    return R.choice(["GITHUB_TOKEN", "gh_token", "NPM_TOKEN", "token"]), crc_token(
        R.choice(["ghp_", "gho_", "ghs_", "ghu_", "npm_"]), 30, valid=False)


def d_jwt_io():
    return R.choice(["token", "JWT", "example_token", "id_token"]), JWT_IO


def d_slack_docs():
    return "SLACK_WEBHOOK_URL", R.choice(["https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
                                          "https://hooks.slack.com/services/TXXXXXXXX/BXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX"])


def d_stripe_test():
    return R.choice(["STRIPE_SECRET_KEY", "stripe_key", "STRIPE_TEST_KEY"]), R.choice(["sk_test_", "sk_test_51", "rk_test_", "pk_test_"]) + rs(ALNUM, 24)


def d_public_material():
    return "RAWBLOCK", R.choice([
        ["-----BEGIN PUBLIC KEY-----"] + pem_body(294) + ["-----END PUBLIC KEY-----"],
        ["-----BEGIN CERTIFICATE-----"] + pem_body(700) + ["-----END CERTIFICATE-----"]])


def d_ssh_pubkey():
    return R.choice(["ssh_public_key", "authorized_key", "deploy_pubkey"]), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand_b64_bytes(32).rstrip("=") + " " + R.choice(NAMES) + "@laptop"


DECOYS = {
    "aws-docs-example": d_aws_example, "jwt-io-sample": d_jwt_io, "slack-docs-webhook": d_slack_docs, "stripe-test-key": d_stripe_test,
    "placeholder": d_placeholder, "template-variable": d_template, "env-lookup": d_env_lookup, "function-call": d_funcall,
    "type-annotation": d_type_annot, "variable-name-only": d_var_name_only, "low-entropy-password": d_low_entropy, "git-sha": d_git_sha,
    "sha256-hash": d_sha256, "uuid": d_uuid, "lockfile-integrity": d_integrity, "base64-harmless": d_b64_text,
    "github-bad-checksum": d_bad_checksum, "public-key-or-cert": d_public_material, "ssh-public-key": d_ssh_pubkey,
}

# --------------------------------------------------------------------------
# Rendering single-line assignments per host language.
# --------------------------------------------------------------------------


def camel(k):
    parts = k.lower().split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def assign(lang, key, val):
    up, low = key.upper(), key.lower()
    c = R.random()
    if lang == "py":
        if "://" in val or c < 0.5:
            return f'{up} = "{val}"'
        return R.choice([f'{low} = os.getenv("{up}", "{val}")', f'client = Client({low}="{val}")', f'    "{low}": "{val}",'])
    if lang in ("js", "ts"):
        return R.choice([f'const {camel(key)} = "{val}";', f"export const {up} = '{val}';", f'  {camel(key)}: "{val}",',
                         f"const {camel(key)} = process.env.{up} || \"{val}\";"])
    if lang == "go":
        return R.choice([f'const {camel(key).title()[0] + camel(key)[1:]} = "{val}"', f'\t{camel(key)} := "{val}"'])
    if lang == "java":
        return f'    private static final String {up} = "{val}";'
    if lang == "rs":
        return R.choice([f'const {up}: &str = "{val}";', f'    let {low} = "{val}";'])
    if lang == "rb":
        return R.choice([f"{up} = '{val}'", f'ENV["{up}"] ||= "{val}"', f"  config.{low} = '{val}'"])
    if lang == "yaml":
        return R.choice([f"  {low}: {val}", f'  {low}: "{val}"'])
    if lang == "toml":
        return f'{low} = "{val}"'
    if lang == "ini":
        return f"{low} = {val}"
    if lang == "env":
        return R.choice([f"{up}={val}", f'{up}="{val}"'])
    if lang == "sh":
        if key.lower().endswith("token") and "://" not in val and c < 0.3:
            return f'curl -sf -H "Authorization: Bearer {val}" https://api.acme-corp.io/v1/{word()}'
        return R.choice([f'export {up}="{val}"', f"{up}='{val}'"])
    if lang == "dockerfile":
        return R.choice([f"ENV {up}={val}", f"ARG {up}={val}", f'ENV {up}="{val}"'])
    if lang == "gha":
        return f"          {up}: {val}"
    if lang == "gitlab":
        return f'    {up}: "{val}"'
    if lang == "tf":
        return f'  {low} = "{val}"'
    if lang == "md":
        return R.choice([f"export {up}={val}", f'{low} = "{val}"'])
    if lang == "log":
        ts = f"2024-{R.randint(1, 12):02d}-{R.randint(1, 28):02d}T{R.randint(0, 23):02d}:{R.randint(0, 59):02d}:{R.randint(0, 59):02d}.{R.randint(0, 999):03d}Z"
        return R.choice([f"{ts} DEBUG [{word()}-{R.randint(1, 9)}] loaded settings {low}={val}",
                         f"{ts} INFO  http: request headers={{'Authorization': 'Bearer {val}'}}" if "://" not in val else f"{ts} INFO  connecting to {val}",
                         f"{ts} WARN  env dump: {up}={val}"])
    if lang == "ipynb":
        return f'{up} = "{val}"'
    raise ValueError(lang)


# --------------------------------------------------------------------------
# Filler (clean) lines and files.
# --------------------------------------------------------------------------
COMMENT = {"py": "#", "js": "//", "ts": "//", "go": "//", "java": "//", "rs": "//", "rb": "#", "yaml": "#", "toml": "#", "ini": ";",
           "env": "#", "sh": "#", "dockerfile": "#", "gha": "#", "gitlab": "#", "tf": "#", "md": "", "log": "", "ipynb": "#"}


def sentence(n=None):
    n = n or R.randint(5, 12)
    s = " ".join(R.choice(WORDS) for _ in range(n))
    return s[0].upper() + s[1:] + "."


def filler(lang):
    w1, w2, w3 = word(), word(), word()
    n = R.randint(1, 500)
    cm = COMMENT[lang]
    opts = {
        "py": [f"def {w1}_{w2}({w3}, limit={n}):", f"    return [{w3} for {w3} in {w1}s if {w3}.{w2}]", f"logger.info(\"{w1} {w2} done in %s ms\", {n})",
               f"{w1.upper()}_{w2.upper()}_LIMIT = {n}", f"    if not {w1}:", f"        raise ValueError(\"{w1} {w2} missing\")", f"from .{w1} import {w2.title()}{w3.title()}"],
        "js": [f"function {w1}{w2.title()}({w3}) {{", f"  return {w3}.filter((x) => x.{w2} > {n});", "}", f"import {{ {w1}{w2.title()} }} from './{w3}';",
               f"export const {w1.upper()}_LIMIT = {n};", f"  console.debug('{w1} {w2}', {w3});"],
        "go": [f"func {w1.title()}{w2.title()}(ctx context.Context, {w3} int) error {{", f"\tif {w3} > {n} {{", f"\t\treturn fmt.Errorf(\"{w1} {w2}: %d\", {w3})", "\t}", "}",
               f"\tlog.Printf(\"{w1} {w2} %v\", {w3})"],
        "java": [f"    public int {w1}{w2.title()}(int {w3}) {{", f"        return {w3} * {n};", "    }", f"    // {sentence()}", f"    private final List<String> {w1}s = new ArrayList<>();"],
        "rs": [f"fn {w1}_{w2}({w3}: usize) -> usize {{", f"    {w3}.saturating_mul({n})", "}", f"/// {sentence()}", f"use crate::{w1}::{w2.title()};"],
        "rb": [f"def {w1}_{w2}({w3})", f"  {w3}.select {{ |x| x.{w2} > {n} }}", "end", f"require '{w1}/{w2}'"],
        "yaml": [f"  {w1}_{w2}: {n}", f"  {w1}: {w2}", f"  enabled: {R.choice(['true', 'false'])}", f"{w1}:", f"  - {w2}-{w3}"],
        "toml": [f"{w1}_{w2} = {n}", f'{w1} = "{w2}"', f"[{w1}.{w2}]", f"enabled = {R.choice(['true', 'false'])}"],
        "ini": [f"{w1}_{w2} = {n}", f"{w1} = {w2}", f"[{w1}]"],
        "env": [f"{w1.upper()}_{w2.upper()}={n}", f"{w1.upper()}={w2}", f"LOG_LEVEL={R.choice(['info', 'debug', 'warn'])}"],
        "sh": [f"echo \"{w1} {w2}\"", f"if [ -d \"./{w1}\" ]; then", f"  rm -rf ./{w1}/{w2}", "fi", f"{w1}_count={n}", f"./scripts/{w1}.sh --{w2}"],
        "dockerfile": [f"RUN apt-get update && apt-get install -y --no-install-recommends {w1}-tools", f"COPY {w1}/ /app/{w1}/", f"WORKDIR /app/{w2}",
                       f"EXPOSE {8000 + n}", f"ENV {w1.upper()}_PORT={8000 + n}"],
        "gha": [f"      - name: {w1} {w2}", f"        run: make {w1}", f"        uses: actions/checkout@v4", f"          {w1.upper()}_LEVEL: {n}"],
        "gitlab": [f"  - make {w1}", f"  script: ./ci/{w1}.sh", f"    {w1.upper()}: \"{w2}\"", f"  stage: {w2}"],
        "tf": [f"  {w1}_{w2} = {n}", f'  name = "{w1}-{w2}"', f'  tags = {{ team = "{w3}" }}'],
        "md": [sentence(), "", f"- {sentence()}", f"## {w1.title()} {w2}", f"Run `make {w1}` to {w2} the {w3}."],
        "log": [f"2024-0{R.randint(1, 9)}-1{R.randint(0, 9)}T0{R.randint(0, 9)}:1{R.randint(0, 9)}:2{R.randint(0, 9)}.{n:03d}Z INFO  [{w1}] {w2} {w3} completed in {n}ms",
                f"2024-0{R.randint(1, 9)}-1{R.randint(0, 9)}T0{R.randint(0, 9)}:3{R.randint(0, 9)}:0{R.randint(0, 9)}.{n:03d}Z DEBUG [{w1}] {w2}={n}"],
        "ipynb": [f"df = pd.read_csv(\"{w1}.csv\")", f"df.groupby(\"{w2}\").{w3}.sum()", f"plt.plot(df.{w1})"],
    }
    if lang == "ts":
        lang = "js"
    opts_l = opts[lang]
    if cm and R.random() < 0.15:
        return f"{cm} {sentence()}"
    return R.choice(opts_l)


HEADER = {
    "py": ["import os", "import logging", "", "logger = logging.getLogger(__name__)", ""],
    "js": ["'use strict';", ""], "ts": ["import { Client } from './client';", ""],
    "go": ["package config", "", "import (", "\t\"context\"", "\t\"fmt\"", "\t\"log\"", ")", ""],
    "java": ["package com.acme.config;", "", "public class Settings {"], "rs": ["//! Settings.", ""],
    "rb": ["# frozen_string_literal: true", ""], "yaml": ["# application settings", "settings:"], "toml": ["[settings]"],
    "ini": ["[default]"], "env": ["# local environment"], "sh": ["#!/usr/bin/env bash", "set -euo pipefail", ""],
    "dockerfile": ["FROM python:3.11-slim", "WORKDIR /app"], "gha": ["name: deploy", "on:", "  push:", "    branches: [main]", "jobs:", "  deploy:",
                                                                      "    runs-on: ubuntu-latest", "    steps:", "      - uses: actions/checkout@v4", "      - name: deploy", "        run: ./deploy.sh", "        env:"],
    "gitlab": ["stages: [build, test, deploy]", "", "variables:"], "tf": ["provider \"aws\" {", "  region = \"eu-west-1\"", "}", "", "resource \"acme_service\" \"main\" {"],
    "md": ["# Setup", "", "```bash"], "log": [], "ipynb": [],
}
FOOTER = {"java": ["}"], "tf": ["}"], "md": ["```", ""]}

HOSTS_BY_LANG = {
    "py": ["src/{a}/{b}.py", "app/{a}/settings.py", "scripts/{a}_{b}.py", "tests/test_{a}.py", ".config/{a}/{b}.py"],
    "js": ["web/src/{a}/{b}.js", "server/{a}.js", "config/{a}.config.js"], "ts": ["web/src/{a}/{b}.ts", "packages/{a}/src/{b}.ts"],
    "go": ["internal/{a}/{b}.go", "cmd/{a}/main.go"], "java": ["services/{a}/src/main/java/com/acme/{a}/{b}.java"],
    "rs": ["crates/{a}/src/{b}.rs"], "rb": ["lib/{a}/{b}.rb", "config/initializers/{a}.rb"],
    "yaml": ["config/{a}.yaml", "deploy/{a}/values.yaml", "config/{a}-{b}.yml", ".config/{a}/config.yaml"],
    "toml": ["config/{a}.toml", ".config/{a}/settings.toml"], "ini": ["config/{a}.ini", "etc/{a}.cfg", ".aws/credentials", ".pypirc"],
    "env": [".env", ".env.{a}", "services/{a}/.env", "deploy/{a}.env", ".env.local"], "sh": ["scripts/{a}.sh", "bin/{a}-{b}", "ops/{a}_{b}.sh"],
    "dockerfile": ["Dockerfile", "docker/{a}/Dockerfile", "services/{a}/Dockerfile"], "gha": [".github/workflows/{a}.yml", ".github/workflows/{a}-{b}.yaml"],
    "gitlab": [".gitlab-ci.yml", "ci/{a}.gitlab-ci.yml", ".gitlab/ci/{a}.yml"], "tf": ["infra/{a}/main.tf", "infra/modules/{a}/{b}.tf", "infra/{a}.auto.tfvars"],
    "md": ["docs/{a}.md", "docs/{a}/{b}.md", "README.{a}.md"], "log": ["logs/{a}-{b}.log", "var/log/{a}.log"], "ipynb": ["notebooks/{a}_{b}.ipynb", "analysis/{a}.ipynb"],
    "json": ["config/{a}.json", "fixtures/{a}-{b}.json", ".vscode/{a}.json"],
}
LANGS = list(HOSTS_BY_LANG)
LANG_WEIGHTS = {"py": 10, "js": 6, "ts": 5, "go": 5, "java": 4, "rs": 4, "rb": 4, "yaml": 9, "toml": 4, "ini": 4, "env": 9, "sh": 7,
                "dockerfile": 4, "gha": 6, "gitlab": 5, "tf": 5, "md": 5, "log": 6, "ipynb": 5, "json": 5}


class Corpus:
    def __init__(self, out):
        self.out = out
        self.files = {}  # rel -> text
        self.labels = []
        self.decoys = []

    def unique_path(self, pattern):
        for _ in range(100):
            p = pattern.format(a=word(), b=word())
            if p not in self.files:
                return p
        while True:  # fixed names (.env, .npmrc, .aws/credentials): nest them in a service folder
            p = f"services/{word()}{R.randint(0, 999)}/" + pattern.format(a=word(), b=word())
            if p not in self.files:
                return p

    def write(self):
        for rel, text in self.files.items():
            p = os.path.join(self.out, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        with open(os.path.join(self.out, "labels.jsonl"), "w") as f:
            for r in sorted(self.labels, key=lambda r: (r["file"], r["line"])):
                f.write(json.dumps(r) + "\n")
        with open(os.path.join(self.out, "decoys.jsonl"), "w") as f:
            for r in sorted(self.decoys, key=lambda r: (r["file"], r["line"])):
                f.write(json.dumps(r) + "\n")


def sha(v):
    return hashlib.sha256(v.encode()).hexdigest()


def record(c, item, rel, line, end=None, start=None):
    r = {"file": rel, "line": line, "type": item["type"], "value_sha256": sha(item["value"])}
    if start and start != line:
        r["start_line"] = start
    if end and end != line:
        r["end_line"] = end
    (c.labels if item["secret"] else c.decoys).append(r)


# --------------------------------------------------------------------------
# Host file writers
# --------------------------------------------------------------------------

def indent_for(lang):
    return {"gha": "          ", "gitlab": "    ", "yaml": "  ", "tf": "  "}.get(lang, "")


def block_lines(lang, key, text_lines):
    """Render a multi-line block (PEM) in a line-oriented host; return (lines, first_idx, last_idx)."""
    if lang == "py":
        return [f'{key.upper()} = """'] + text_lines + ['"""'], 1, len(text_lines)
    if lang in ("js", "ts"):
        return [f"const {camel(key)} = `"] + text_lines + ["`;"], 1, len(text_lines)
    if lang in ("yaml", "gha", "gitlab"):
        ind = indent_for(lang)
        return [f"{ind}{key}: |"] + [ind + "  " + t if t else "" for t in text_lines], 1, len(text_lines)
    if lang == "tf":
        return [f"  {key} = <<EOT"] + text_lines + ["EOT"], 1, len(text_lines)
    if lang == "rb":
        return [f"{key.upper()} = <<~PEM"] + ["  " + t for t in text_lines] + ["PEM"], 1, len(text_lines)
    if lang == "sh":
        return [f"cat > ~/.ssh/{key} <<'EOF'"] + text_lines + ["EOF"], 1, len(text_lines)
    if lang == "md":
        return ["```"] + text_lines + ["```"], 1, len(text_lines)
    if lang == "env":
        return [f'{key.upper()}="{text_lines[0]}'] + text_lines[1:-1] + [text_lines[-1] + '"'], 0, len(text_lines) - 1
    if lang == "rs":
        return [f'const {key.upper()}: &str = r"'] + text_lines + ['";'], 1, len(text_lines)
    return None


BLOCK_LANGS = ["py", "js", "ts", "yaml", "gha", "gitlab", "tf", "rb", "sh", "md", "env", "rs"]


def line_host(c, lang, items):
    """Line-oriented host file. items: list of dicts (secret|decoy)."""
    rel = c.unique_path(R.choice(HOSTS_BY_LANG[lang]))
    lines = list(HEADER.get(lang, []))
    if lang == "gha":
        lines = list(HEADER["gha"])
    marks = []  # (item, first, last) 0-based
    for it in items:
        for _ in range(R.randint(1, 6)):
            if lang in ("gha",):
                lines.append(f"          {word().upper()}_{word().upper()}: \"{R.randint(1, 99)}\"")
            elif lang == "gitlab":
                lines.append(f"    {word().upper()}_{word().upper()}: \"{word()}\"")
            elif lang == "tf":
                lines.append(f"  {word()}_{word()} = {R.randint(1, 500)}")
            else:
                lines.append(filler(lang))
        if it.get("block") is not None:
            bl, a, b = block_lines(lang, it["key"], it["block"])
            base = len(lines)
            lines.extend(bl)
            marks.append((it, base + a, base + b))
        elif it.get("raw") is not None:
            raw = it["raw"]
            first = len(lines)
            lines.extend(raw.split("\n"))
            marks.append((it, first, first))
        else:
            marks.append((it, len(lines), len(lines)))
            lines.append(assign(lang, it["key"], it["value"]))
    for _ in range(R.randint(2, 12)):
        lines.append(filler(lang) if lang not in ("gha", "gitlab", "tf") else f"{indent_for(lang)}# {sentence()}")
    if lang == "gha":
        lines += ["      - name: notify", "        run: echo done"]
    lines += FOOTER.get(lang, [])
    c.files[rel] = "\n".join(lines) + "\n"
    for it, a, b in marks:
        record(c, it, rel, a + 1, b + 1)


def json_host(c, items):
    rel = c.unique_path(R.choice(HOSTS_BY_LANG["json"]))
    obj = {"name": word() + "-" + word(), "version": f"{R.randint(0, 4)}.{R.randint(0, 20)}.{R.randint(0, 9)}", "settings": {}}
    keys = []
    for i, it in enumerate(items):
        for _ in range(R.randint(0, 3)):
            obj["settings"][f"{word()}_{word()}_{i}{R.randint(0, 9)}"] = R.choice([R.randint(1, 999), word(), True])
        if it.get("rawkv"):
            k, v = it["rawkv"]
        else:
            k, v = it["key"], it["value"]
        k = f"{k}" if k not in obj["settings"] else f"{k}_{i}"
        obj["settings"][k] = v
        keys.append((it, k, v))
    text = json.dumps(obj, indent=2) + "\n"
    lines = text.split("\n")
    c.files[rel] = text
    for it, k, v in keys:
        needle = "    " + json.dumps(k) + ": " + json.dumps(v)
        ln = next(i for i, l in enumerate(lines) if l.startswith(needle))
        record(c, it, rel, ln + 1)


def notebook_host(c, items):
    rel = c.unique_path(R.choice(HOSTS_BY_LANG["ipynb"]))
    cells = [{"cell_type": "markdown", "metadata": {}, "source": [f"# {word().title()} {word()} analysis\n", "\n", sentence() + "\n"]}]
    srcs = []
    for it in items:
        src = ["import os\n", "import pandas as pd\n"] + [filler("ipynb") + "\n" for _ in range(R.randint(0, 3))]
        if it.get("raw") is not None:
            line = it["raw"]
        else:
            line = assign("ipynb", it["key"], it["value"])
        src.append(line + "\n")
        src += [filler("ipynb") + "\n" for _ in range(R.randint(0, 2))]
        src[-1] = src[-1].rstrip("\n")
        cells.append({"cell_type": "code", "execution_count": R.randint(1, 40), "metadata": {},
                      "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"{word()} {R.randint(1, 999)}\n"]}], "source": src})
        srcs.append((it, json.dumps(line)[:-1]))
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                                      "language_info": {"name": "python", "version": "3.11.7"}}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=1) + "\n"
    lines = text.split("\n")
    c.files[rel] = text
    start = 0
    for it, needle in srcs:
        ln = next(i for i in range(start, len(lines)) if needle in lines[i])
        start = ln + 1
        record(c, it, rel, ln + 1)


def pem_file(c, it):
    rel = c.unique_path(R.choice(["keys/{a}.pem", "certs/{a}-{b}.key", ".ssh/id_{a}", "deploy/{a}/tls.key", "secrets/{a}.asc", ".config/{a}/private.pem"]))
    lines = it["block"]
    pre = [] if R.random() < 0.7 else [f"# {word()} {word()} key, rotated {R.randint(2019, 2024)}"]
    c.files[rel] = "\n".join(pre + lines) + "\n"
    record(c, it, rel, len(pre) + 1, len(pre) + len(lines))


def gcp_sa_file(c, it):
    rel = c.unique_path(R.choice(["config/{a}-service-account.json", "credentials/{a}-{b}.json", ".config/gcloud/{a}.json", "deploy/{a}/sa-key.json"]))
    proj = f"{word()}-{word()}-{R.randint(100000, 999999)}"
    sa = {"type": "service_account", "project_id": proj, "private_key_id": rs(HEX, 40), "private_key": it["value"],
          "client_email": f"{word()}-sa@{proj}.iam.gserviceaccount.com", "client_id": str(R.randint(10**20, 10**21 - 1)),
          "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
          "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
          "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/{word()}-sa%40{proj}.iam.gserviceaccount.com",
          "universe_domain": "googleapis.com"}
    text = json.dumps(sa, indent=2) + "\n"
    c.files[rel] = text
    lines = text.rstrip("\n").split("\n")
    ln = next(i for i, l in enumerate(lines) if l.strip().startswith('"private_key":'))
    record(c, it, rel, ln + 1, end=len(lines), start=1)  # the whole JSON object is the credential


def docker_config_file(c, it, extra_decoys):
    rel = c.unique_path(R.choice([".docker/config.json", "deploy/{a}/docker-config.json", "ci/{a}/.dockerconfigjson"]))
    auths = {}
    order = []
    for d in extra_decoys:  # decoys: placeholder auth entries
        host = f"{word()}.registry.acme-corp.io"
        auths[host] = {"auth": d["value"]}
        order.append((d, host))
    host = R.choice(["https://index.docker.io/v1/", "ghcr.io", f"{R.randint(100000000000, 999999999999)}.dkr.ecr.eu-west-1.amazonaws.com", "registry.gitlab.com"])
    auths[host] = {"auth": it["value"]}
    order.append((it, host))
    text = json.dumps({"auths": auths, "credsStore": "" if R.random() < 0.5 else "desktop"}, indent=2) + "\n"
    lines = text.split("\n")
    c.files[rel] = text
    for x, h in order:
        hl = next(i for i, l in enumerate(lines) if l.strip().startswith(json.dumps(h)))
        record(c, x, rel, hl + 2)


def k8s_file(c, items):
    rel = c.unique_path(R.choice(["deploy/k8s/{a}-secret.yaml", "k8s/{a}/secrets.yaml", "charts/{a}/templates/{b}-secret.yaml"]))
    name = f"{word()}-{word()}"
    lines = ["apiVersion: v1", "kind: Secret", "metadata:", f"  name: {name}", f"  namespace: {word()}", "type: Opaque", "data:"]
    marks = []
    for it in items:
        marks.append((it, len(lines)))
        lines.append(f"  {it['key']}: {it['value']}")
    lines += ["---", "apiVersion: v1", "kind: ConfigMap", "metadata:", f"  name: {name}-config", "data:", f"  LOG_LEVEL: {R.choice(['info', 'debug'])}"]
    c.files[rel] = "\n".join(lines) + "\n"
    for it, ln in marks:
        record(c, it, rel, ln + 1)


def npmrc_file(c, it):
    rel = c.unique_path(R.choice([".npmrc", "web/.npmrc", "packages/{a}/.npmrc"]))
    lines = ["registry=https://registry.npmjs.org/", "save-exact=true", f"//registry.npmjs.org/:_authToken={it['value']}", "engine-strict=true"]
    c.files[rel] = "\n".join(lines) + "\n"
    record(c, it, rel, 3)


# --------------------------------------------------------------------------
# Clean files
# --------------------------------------------------------------------------

def clean_files(c, target_bytes):
    total = 0
    kinds = ["py", "js", "ts", "go", "java", "rs", "rb", "yaml", "toml", "md", "sh", "csv", "log", "html"]
    while total < target_bytes:
        k = R.choice(kinds)
        if k == "csv":
            rel = c.unique_path("data/{a}_{b}.csv")
            rows = ["id,name,region,amount,created"] + [f"{i},{R.choice(NAMES)},{R.choice(['eu', 'us', 'ap'])},{R.randint(1, 99999) / 100},2024-0{R.randint(1, 9)}-1{R.randint(0, 9)}"
                                                         for i in range(R.randint(50, 600))]
            text = "\n".join(rows) + "\n"
        elif k == "html":
            rel = c.unique_path("web/public/{a}.html")
            text = "<!doctype html>\n<html><head><title>" + word() + "</title></head><body>\n" + "\n".join(
                f"<p class=\"{word()}\">{sentence()}</p>" for _ in range(R.randint(20, 200))) + "\n</body></html>\n"
        else:
            lang = k
            pat = R.choice(HOSTS_BY_LANG[lang])
            if pat.startswith(".") or "credentials" in pat or ".env" in pat:
                pat = "src/{a}/{b}." + {"yaml": "yaml", "toml": "toml", "md": "md", "sh": "sh", "log": "log"}.get(lang, lang)
            rel = c.unique_path(pat)
            body = list(HEADER.get(lang, [])) + [filler(lang) for _ in range(R.randint(30, 400))] + FOOTER.get(lang, [])
            text = "\n".join(body) + "\n"
        c.files[rel] = text
        total += len(text)
    # a few structural files every repo has
    c.files[".gitignore"] = ".env\n.env.*\n*.log\nlogs/\nvar/\nsecrets/\n.ssh/\nnode_modules/\ntarget/\n__pycache__/\n"
    c.files["README.md"] = "# acme-platform\n\n" + "\n\n".join(sentence(20) for _ in range(30)) + "\n"
    c.files["LICENSE"] = "MIT License\n\nCopyright (c) 2024 Acme Corp\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"


# --------------------------------------------------------------------------

def make_secret(t):
    gen, keys, host = T[t]
    v = gen()
    it = {"secret": True, "type": t, "value": v, "key": R.choice(keys), "host": host}
    if t in MULTILINE:
        it["block"] = v.split("\n")
    return it


def make_decoy(cls):
    r = DECOYS[cls]()
    it = {"secret": False, "type": cls, "host": None}
    if r[0] == "RAW":
        it["rawmap"] = r[1]
        it["value"] = cls
        it["key"] = "raw"
    elif r[0] == "RAWBLOCK":
        it["block"] = r[1]
        it["value"] = "\n".join(r[1])
        it["key"] = R.choice(["public_key", "ca_cert", "tls_cert"])
    else:
        it["key"], it["value"] = r
    return it


def place(c, items, lang):
    """Place a mixed list of items into one host file of language lang."""
    ready = []
    for it in items:
        it = dict(it)
        if "rawmap" in it:
            rv = it["rawmap"].get(lang) or it["rawmap"]["py"]
            if isinstance(rv, tuple):  # JSON form
                if lang == "json":
                    it["rawkv"] = (rv[1], rv[2])
                else:
                    it["raw"] = it["rawmap"]["py"]
            else:
                if lang == "json":
                    it["rawkv"] = it["rawmap"]["json"][1:]
                else:
                    it["raw"] = rv
        ready.append(it)
    if lang == "json":
        json_host(c, ready)
    elif lang == "ipynb":
        notebook_host(c, ready)
    else:
        line_host(c, lang, ready)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--secrets", type=int, default=420)
    ap.add_argument("--decoys", type=int, default=420)
    ap.add_argument("--clean-mb", type=float, default=3.0, help="approximate size of clean filler files (MB)")
    a = ap.parse_args()
    R.seed(a.seed)
    c = Corpus(a.out)

    # --- secrets: round-robin over all types (every type appears), shuffled order
    types = list(T)
    secrets = []
    i = 0
    while len(secrets) < a.secrets:
        t = types[i % len(types)]
        i += 1
        it = make_secret(t)
        secrets.append([it])
    # AWS pairing: half of the key ids get a matching secret key (and sometimes a session token) in the same file;
    # the others stay alone (key id without secret).
    groups = []
    aws_secret_groups = [g for g in secrets if g[0]["type"] in ("aws-secret-access-key", "aws-session-token")]
    rest = [g for g in secrets if g[0]["type"] not in ("aws-secret-access-key", "aws-session-token")]
    for g in rest:
        if g[0]["type"] == "aws-access-key-id" and aws_secret_groups and R.random() < 0.6:
            g = g + aws_secret_groups.pop()
            if aws_secret_groups and aws_secret_groups[-1][0]["type"] == "aws-session-token" and R.random() < 0.5:
                g = g + aws_secret_groups.pop()
        groups.append(g)
    groups += aws_secret_groups
    R.shuffle(groups)

    # --- decoys
    classes = list(DECOYS)
    decoys = [make_decoy(classes[j % len(classes)]) for j in range(a.decoys)]
    R.shuffle(decoys)

    # special hosts first
    line_groups = []
    dc_pool = decoys
    for g in groups:
        h = g[0]["host"]
        if h == "gcp_sa":
            gcp_sa_file(c, g[0])
        elif h == "docker_config":
            extra = []
            if R.random() < 0.5 and dc_pool:
                d = {"secret": False, "type": "placeholder", "value": R.choice(["", "<base64 user:token>", "${DOCKER_AUTH}"]), "key": "auth"}
                d["type"] = "placeholder" if d["value"] != "${DOCKER_AUTH}" else "template-variable"
                extra.append(d)
            docker_config_file(c, g[0], extra)
        elif h == "k8s":
            k8s_file(c, g)
        elif h == "pem" and R.random() < 0.4:
            pem_file(c, g[0])
        elif g[0]["type"] == "npm-token" and R.random() < 0.4:
            npmrc_file(c, g[0])
        else:
            line_groups.append(g)

    # mix the remaining secrets and decoys into host files of 1-6 items
    units = [("s", g) for g in line_groups] + [("d", [d]) for d in dc_pool]
    R.shuffle(units)
    langs = list(LANG_WEIGHTS)
    wts = [LANG_WEIGHTS[l] for l in langs]
    while units:
        n = R.randint(1, 6)
        batch, units = units[:n], units[n:]
        items = [x for _, g in batch for x in g]
        need_block = any(x.get("block") is not None for x in items)
        lang = R.choice(BLOCK_LANGS) if need_block else R.choices(langs, wts)[0]
        place(c, items, lang)

    labeled_bytes = sum(len(t) for t in c.files.values())
    clean_files(c, int(a.clean_mb * 1e6))
    c.write()
    total = sum(len(t.encode()) for t in c.files.values())
    print(json.dumps({"out": a.out, "files": len(c.files), "bytes": total, "labeled_host_bytes": labeled_bytes,
                      "secrets": len(c.labels), "secret_types": len({l["type"] for l in c.labels}),
                      "decoys": len(c.decoys), "decoy_classes": len({d["type"] for d in c.decoys})}))


if __name__ == "__main__":
    main()
