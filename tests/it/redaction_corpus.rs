//! docs/design/context.md#context-collection: the redaction corpus. Realistic secrets in the formats
//! people use (shell, dotenv, YAML, TOML, JSON, notebooks, INI, PHP, Python, JS, XML, Java
//! properties, CSV, command lines, headers, URLs, key files, vendor tokens) must not reach the
//! model, and near misses (prose and configuration that name secrets without holding one)
//! must come out unchanged; so must this repository's own files.
//!
//! Every value here is made up. Token-shaped values are built from pieces so this file does
//! not look like a leak to a scanner.

use agent_meeting::context::redact;

/// One sample: where it comes from, its text, and the secret values that must not survive.
struct Sample {
    label: &'static str,
    text: String,
    secrets: Vec<String>,
}

/// `text` with `{S}` replaced by `secret`.
fn s(label: &'static str, text: &str, secret: &str) -> Sample {
    Sample {
        label,
        text: text.replace("{S}", secret),
        secrets: vec![secret.to_string()],
    }
}

/// A sample with several secrets, written out in `text`.
fn many(label: &'static str, text: &str, secrets: &[&str]) -> Sample {
    Sample {
        label,
        text: text.to_string(),
        secrets: secrets.iter().map(|x| x.to_string()).collect(),
    }
}

/// `prefix` and `unit` repeated `n` times.
fn rep(prefix: &str, unit: &str, n: usize) -> String {
    format!("{prefix}{}", unit.repeat(n))
}

/// Samples the redactor is known to miss: kept in the corpus so the ratio is honest, listed
/// in docs/design/context.md#context-collection as not covered.
const KNOWN_MISSES: [&str; 3] = [
    "pgpass line",
    "terraform variable default",
    "prose sentence",
];

fn corpus() -> Vec<Sample> {
    let pem_body = rep("MIIEowIBAAKCAQEA", "q83vEjRWeJAx9Kf2", 4);
    let long = rep("Lq9", "x7Rk2Pq9Zt4W", 30);
    let sk = |kind: &str| rep(&format!("sk-{kind}-"), "Ab3xYz9Q_k", 6);
    let b64 = "dXNlcjpwYXNzd29yZDEyMw==";
    vec![
        // Shell and dotenv
        s("dotenv password", "DB_PASSWORD={S}\n", "Pa55w0rd-9x"),
        s(
            "export aws secret",
            "export AWS_SECRET_ACCESS_KEY={S}\n",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE1",
        ),
        s("export quoted token", "export GITHUB_TOKEN=\"{S}\"\n", "q7-not-a-shape-7731aa"),
        s("single-quoted key", "STRIPE_KEY='{S}'\n", "pk9Xw2LmQ7rT"),
        s(
            "PGPASSWORD before psql",
            "PGPASSWORD={S} psql -h db.internal -U app app\n",
            "Summer.Time",
        ),
        s("MYSQL_PWD", "MYSQL_PWD={S} mysql -u root shop\n", "r00t-Pw"),
        s("sentry auth token", "SENTRY_AUTH_TOKEN={S}\n", "a1b2c3d4e5f6a7b8c9d0"),
        s(
            "laravel app key",
            "APP_KEY={S}\n",
            "base64:Zm9vYmFyYmF6cXV4cXV1eHh4eHh4eA==",
        ),
        s(
            "session secret with comment",
            "SESSION_SECRET={S}  # rotate monthly\n",
            "keyboard-cat-42",
        ),
        s("redis pass", "REDIS_PASS={S}\n", "c4che-Pass"),
        s("windows set", "set DB_PASSWORD={S}\r\n", "Winter2024!"),
        s("powershell env", "$env:API_KEY = \"{S}\"\n", "ps-Key-5521"),
        many(
            "backslash-continued token",
            "TOKEN=abcd1234\\\nefgh5678\n",
            &["abcd1234", "efgh5678"],
        ),
        s("dotenv openai project key", "OPENAI_API_KEY={S}\n", &sk("proj")),
        s("vault token variable", "export VAULT_TOKEN={S}\n", "s.Xy7Zk2Lm9Qw"),
        s("npm token variable", "NPM_TOKEN={S}\n", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"),
        s("jwt secret over 256 chars", "JWT_SECRET=\"{S}\"\n", &long),
        s("client secret with dots", "CLIENT_SECRET={S}\n", "abc.def-123.ghi"),
        s(
            "kubeadm token variable",
            "KUBEADM_TOKEN={S}\n",
            "abcdef.0123456789abcdef",
        ),
        s("bare password with a dot", "password={S}\n", "Summer.Time"),
        s(
            "well-known default password",
            "    environment:\n      POSTGRES_PASSWORD: {S}\n",
            "changeme",
        ),
        s("any *_KEY", "ENCRYPTION_KEY={S}\n", "e3b0c44298fc1c149afb"),
        s("any *_SECRET", "WEBHOOK_SECRET={S}\n", "whsec-7Hn2Kq"),
        s("any *_TOKEN", "DISCORD_BOT_TOKEN={S}\n", "MTk4NjIyNDgzNDcxOTI1MjQ4"),
        s("docker-compose env list", "    environment:\n      - POSTGRES_PASSWORD={S}\n", "pg-Secret-1"),
        // YAML
        s("yaml password with a dot", "password: {S}\n", "Summer.Time"),
        s("yaml quoted db password", "  db_password: \"{S}\"\n", "dbPa$$-2024"),
        s("yaml api key", "api_key: {S}\n", "f00dbabe1234cafe"),
        s("yaml secret key single quotes", "secret_key: '{S}'\n", "django-insecure-9x!k"),
        s(
            "kubeadm bootstrap token",
            "bootstrapTokens:\n- groups:\n  - system:bootstrappers:kubeadm:default-node-token\n  token: {S}\n",
            "abcdef.0123456789abcdef",
        ),
        many(
            "yaml block scalar",
            "db:\n  password: |\n    first-line-Xk29\n    second-line-Qp71\n  user: app\n",
            &["first-line-Xk29", "second-line-Qp71"],
        ),
        many(
            "yaml folded private key",
            "tls:\n  private_key: >-\n    MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n    BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n",
            &["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"],
        ),
        s(
            "kubeconfig client-key-data",
            "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJU\n    client-key-data: {S}\n",
            "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==",
        ),
        s(
            "kubeconfig token",
            "users:\n- name: ci\n  user:\n    token: {S}\n",
            "kube-Tok3n-abcdef0123",
        ),
        s(
            "kubernetes secret stringData",
            "apiVersion: v1\nkind: Secret\nstringData:\n  DB_PASSWORD: {S}\n",
            "k8s-Pw-771",
        ),
        s(
            "kubernetes env name/value",
            "        env:\n          - name: DB_PASSWORD\n            value: {S}\n",
            "env-Value-Pw9",
        ),
        s(
            "compose environment map",
            "    environment:\n      MYSQL_ROOT_PASSWORD: {S}\n",
            "r0ot-My5ql",
        ),
        s("ansible become pass", "ansible_become_pass: {S}\n", "sud0-Pass"),
        s(
            "spring datasource yaml",
            "spring:\n  datasource:\n    url: jdbc:postgresql://db/app\n    password: {S}\n",
            "spr1ng-Pw",
        ),
        s(
            "yaml flow mapping",
            "credentials: {user: admin, password: {S}}\n",
            "fl0w-Pw",
        ),
        s("yaml quoted key", "\"api-key\": {S}\n", "qk-88ab77cd"),
        many(
            "yaml line-split token",
            "auth:\n  token: abcdefgh12345678\n    ijklmnop90123456\n",
            &["abcdefgh12345678", "ijklmnop90123456"],
        ),
        s("helm root password", "auth:\n  rootPassword: {S}\n", "h3lm-Root"),
        s("yaml redis password quoted", "redis:\n  password: \"{S}\"\n", "r3dis-Pw"),
        s("yaml long value", "signing_key: {S}\n", &long),
        // TOML
        s("toml password", "[database]\npassword = \"{S}\"\n", "t0ml-Pw"),
        s("toml single quotes", "password = '{S}'\n", "lit3ral-Pw"),
        s("toml triple quotes", "api_token = \"\"\"{S}\"\"\"\n", "tr1ple-Tok"),
        s("cargo registry token", "[registry]\ntoken = \"{S}\"\n", "cio-Tok-99aa"),
        s("toml secret", "secret = \"{S}\"\n", "t0ml-Secret"),
        // JSON and notebooks
        s("json password", "{\"user\": \"app\", \"password\": \"{S}\"}\n", "js0n-Pw"),
        s("json apiKey", "  \"apiKey\": \"{S}\",\n", "js-ApiKey-55"),
        s("json compact client_secret", "{\"client_secret\":\"{S}\"}", "cs-7788-xy"),
        s(
            "docker config auth",
            "{\"auths\": {\"https://index.docker.io/v1/\": {\"auth\": \"{S}\"}}}\n",
            b64,
        ),
        s(
            "notebook json escaped",
            "   \"source\": [\n    \"{\\n\",\n    \"    \\\"password\\\": \\\"{S}\\\",\\n\",\n    \"}\"\n   ]\n",
            "nb-Pw-2024",
        ),
        s(
            "notebook code assignment",
            "    \"db_password = \\\"{S}\\\"\\n\",\n",
            "nb-Code-Pw",
        ),
        s(
            "notebook os.environ",
            "    \"os.environ[\\\"ANTHROPIC_API_KEY\\\"] = \\\"{S}\\\"\\n\",\n",
            "nb-Env-Key-7",
        ),
        s(
            "notebook curl header",
            "    \"!curl -H \\\"X-Api-Key: {S}\\\" https://api.example.com\\n\",\n",
            "nbHdr-9f8e7d6c",
        ),
        s("json long value", "{\"token\": \"{S}\"}", &long),
        s(
            "service account private key",
            "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{S}\\n-----END PRIVATE KEY-----\\n\"}",
            &pem_body,
        ),
        s("json secret in array of objects", "[{\"name\": \"x\", \"secret\": \"{S}\"}]", "arr-S3cret"),
        // INI
        s(
            "ini password with spaces",
            "[db]\npassword = {S}\n",
            "correct horse battery staple",
        ),
        s("my.cnf quoted", "[client]\nuser=root\npassword=\"{S}\"\n", "myCnf-Pw"),
        s("ini secret key", "[app]\nsecret_key = {S}\n", "ini-Secret-77"),
        s(
            "pypirc token",
            "[pypi]\nusername = __token__\npassword = {S}\n",
            &rep("pypi-AgEIcHlwaS5vcmc", "CJDk3ZTQ4", 6),
        ),
        s("ini auth token", "auth_token = {S}\n", "iniTok-1234"),
        // PHP
        s("php variable", "$db_password = '{S}';\n", "php-Var-Pw"),
        s("php config array", "$config['api_key'] = '{S}';\n", "php-Arr-Key"),
        s("php define", "define('DB_PASSWORD', '{S}');\n", "php-Def-Pw"),
        s("php array arrow", "    'password' => '{S}',\n", "php-Arrow-Pw"),
        s("php property", "$this->secret = \"{S}\";\n", "php-Prop-S"),
        s("php env superglobal", "$_ENV['STRIPE_SECRET'] = '{S}';\n", "php-Env-S"),
        s("laravel env default", "    'api_token' => env('API_TOKEN', '{S}'),\n", "lara-Def-Tok"),
        s("phpmailer", "$mail->Password = '{S}';\n", "mailer-Pw-3"),
        // Python
        s("python constant", "PASSWORD = \"{S}\"\n", "py-Const-Pw"),
        s("python api key", "api_key = '{S}'\n", "py-Api-Key-1"),
        s(
            "python keyword argument",
            "conn = psycopg2.connect(host=\"db\", user=\"app\", password=\"{S}\")\n",
            "py-Kw-Pw",
        ),
        s("django secret key", "SECRET_KEY = '{S}'\n", "django-insecure-q8$z!x"),
        s("python client", "client = Anthropic(api_key=\"{S}\")\n", "py-Client-Key"),
        s(
            "python os.environ",
            "os.environ[\"AWS_SECRET_ACCESS_KEY\"] = \"{S}\"\n",
            "py-Env-Secret-9",
        ),
        many(
            "python split string",
            "token = (\"abcd1234\"\n         \"efgh5678\")\n",
            &["abcd1234", "efgh5678"],
        ),
        s(
            "python requests auth tuple",
            "r = requests.get(url, auth=(\"deploy\", \"{S}\"))\n",
            "req-Auth-Pw",
        ),
        s(
            "django databases",
            "DATABASES = {'default': {'USER': 'app', 'PASSWORD': '{S}'}}\n",
            "dj-Db-Pw",
        ),
        s("redis client", "r = redis.Redis(host='cache', password='{S}')\n", "py-Redis-Pw"),
        s(
            "python headers dict",
            "headers = {\"Authorization\": \"Token {S}\"}\n",
            "drf0123456789abcdef",
        ),
        // JavaScript and TypeScript
        s("js const", "const apiKey = \"{S}\";\n", "js-Const-Key"),
        s("js object property", "  apiKey: '{S}',\n", "js-Prop-Key"),
        s("js process.env assignment", "process.env.DB_PASSWORD = '{S}';\n", "js-Env-Pw"),
        s(
            "js fetch header",
            "fetch(url, { headers: { 'X-Api-Key': '{S}' } });\n",
            "js-Hdr-Key-0",
        ),
        s("js template string", "let token = `{S}`;\n", "js-Tmpl-Tok"),
        s("nodemailer pass", "auth: { user: 'bot@example.com', pass: '{S}' }\n", "nm-Pass-4"),
        s("js object literal", "const config = { password: \"{S}\" };\n", "js-Obj-Pw"),
        s(
            "js connection string",
            "new Client({ connectionString: 'postgres://app:{S}@db/app' });\n",
            "js-Url-Pw",
        ),
        // XML
        s("xml element", "<password>{S}</password>\n", "xml-El-Pw"),
        s("dotnet appSettings", "<add key=\"ApiKey\" value=\"{S}\" />\n", "net-App-Key"),
        s(
            "spring property bean",
            "<property name=\"db.password\" value=\"{S}\"/>\n",
            "bean-Pw-1",
        ),
        s("maven property element", "<db.password>{S}</db.password>\n", "mvn-Prop-Pw"),
        s(
            "maven settings server",
            "<server><id>nexus</id><username>ci</username><password>{S}</password></server>\n",
            "mvn-Srv-Pw",
        ),
        s("xml entry key", "<entry key=\"secret\">{S}</entry>\n", "xml-Entry-S"),
        s(
            "dotnet connection string",
            "<add name=\"Db\" connectionString=\"Server=db;User Id=app;Password={S};\" />\n",
            "net-Conn-Pw",
        ),
        s("xml attribute", "<datasource user=\"app\" password=\"{S}\"/>\n", "xml-Attr-Pw"),
        // Java properties
        s("properties spaces in value", "db.password=my pass phrase\n", "my pass phrase"),
        s(
            "spring properties",
            "spring.datasource.password = {S}\n",
            "spring-Prop-Pw",
        ),
        s("properties colon", "mail.smtp.password:{S}\n", "smtp-Colon-Pw"),
        s("jwt secret property", "jwt.secret={S}\n", "jwt-Prop-S"),
        s("camel secret property", "aws.secretKey={S}\n", "aws-Camel-S"),
        // CSV
        s(
            "aws access keys csv",
            &format!(
                "Access key ID,Secret access key\n{},{{S}}\n",
                rep("AKIA", "Q3EGXPMLZ7TN", 1) + "4VRB"
            ),
            "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLE2",
        ),
        s(
            "aws console credentials csv",
            "User name,Password,Access key ID,Secret access key,Console login link\nci,{S},AKIAQ3EGXPMLZ7TN4VRC,abcd/efgh+ijkl,https://x.signin.aws.amazon.com/console\n",
            "Csv-Console-Pw1",
        ),
        many(
            "generic csv",
            "username,password\nalice,al1ce-Pw\nbob,b0b-Pw\n",
            &["al1ce-Pw", "b0b-Pw"],
        ),
        // Command lines
        s("curl -u", "curl -u admin:{S} https://api.example.com/v1\n", "curl-U-Pw"),
        s(
            "curl --user quoted",
            "curl --user 'deploy:{S}' https://api.example.com\n",
            "curl-User-Pw",
        ),
        s(
            "curl continued -u",
            "curl -sS \\\n  -u ci:{S} \\\n  https://api.example.com\n",
            "curl-Cont-Pw",
        ),
        s(
            "curl X-Api-Key",
            "curl -H \"X-Api-Key: {S}\" https://api.example.com\n",
            "hdrKey-0a1b2c3d",
        ),
        s(
            "curl authorization token",
            "curl -H 'Authorization: Token {S}' https://api.example.com\n",
            "tok0a1b2c3d4e",
        ),
        s(
            "curl short bearer",
            "curl -H \"Authorization: Bearer {S}\" https://api.example.com\n",
            "shortBr3r",
        ),
        s("mysql -p", "mysql -h db -u root -p{S} shop\n", "mysql-P-Pw"),
        s("mysqldump -p quoted", "mysqldump -uroot -p'{S}' shop > dump.sql\n", "dump-Pw"),
        s("redis-cli -a", "redis-cli -h cache -a {S} ping\n", "redis-A-Pw"),
        s("sshpass", "sshpass -p '{S}' ssh deploy@host\n", "sshp-Pw"),
        s("docker login -p", "docker login -u ci -p {S} registry.example.com\n", "dock-Pw-1"),
        s(
            "psql url",
            "psql \"postgresql://app:{S}@db.internal:5432/app\"\n",
            "psql-Url-Pw",
        ),
        s(
            "kubeadm join",
            "kubeadm join 10.0.0.1:6443 --token {S} --discovery-token-ca-cert-hash sha256:0a1b\n",
            "abcdef.0123456789abcdef",
        ),
        s(
            "az login --password",
            "az login --username ci@example.com --password {S}\n",
            "az-Login-Pw1",
        ),
        s("wget --password=", "wget --user=ci --password={S} https://x/f\n", "wget-Pw-2"),
        s(
            "git clone with token",
            "git clone https://oauth2:{S}@gitlab.example.com/g/p.git\n",
            "gitCl0ne-Tok",
        ),
        s(
            "azure sas url",
            "curl \"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&sig={S}\"\n",
            "Zm9vYmFyJTJCYmF6cXV4JTNE",
        ),
        s(
            "s3 presigned url",
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={S}\n",
            "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        ),
        s(
            "openssl passin",
            "openssl rsa -in key.pem -passin pass:{S} -out plain.pem\n",
            "ossl-Pass-1",
        ),
        s("mongo -p", "mongosh --host db -u admin -p {S}\n", "mongo-Pw-1"),
        // HTTP
        s(
            "raw request header",
            "GET /v1/items HTTP/1.1\nHost: api.example.com\nX-Auth-Token: {S}\n",
            "xAuth-Tok-99",
        ),
        s("gitlab private token header", "Private-Token: {S}\n", "privTok-12345"),
        s(
            "basic auth header",
            "Authorization: Basic {S}\n",
            "ZGVwbG95OnMzY3IzdC1wdw==",
        ),
        // URLs
        s("redis url empty user", "REDIS_URL=redis://:{S}@cache:6379/0\n", "redisUrl-Pw"),
        s(
            "mongodb srv url",
            "uri: mongodb+srv://admin:{S}@cluster0.example.net/db\n",
            "mongoUrl-Pw",
        ),
        s("amqp url", "amqp://guest:{S}@rabbit:5672/\n", "amqp-Pw-3"),
        s(
            "url password with a slash",
            "DATABASE_URL=postgres://app:{S}@db/app\n",
            "ab/cd-Pw9",
        ),
        s("https userinfo", "see https://user:{S}@example.com/x\n", "httpsUi-Pw"),
        s("smtp url", "smtp://apikey:{S}@smtp.example.net:587\n", "smtpUrl-Pw1"),
        s("ftp url", "ftp://anonymous:{S}@ftp.example.com/pub\n", "ftpUrl-Pw"),
        s(
            "git-credentials line",
            "https://bot:{S}@github.com\n",
            "gitCred-Tok1",
        ),
        s(
            "url password with a colon",
            "amqps://svc:{S}@mq.example.com\n",
            "a:b-Pw7",
        ),
        // Key files
        s(
            "openssh key",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{S}\n-----END OPENSSH PRIVATE KEY-----\n",
            &rep("b3BlbnNzaC1rZXktdjEA", "AAAABG5vbmUAAAAEbm9uZQ", 3),
        ),
        s(
            "ssh2 encrypted key",
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-20240101\"\n{S}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----\n",
            &rep("P2/56wAAAi4AAAA3aWYtbW9kbntzaWdu", "ZXthdXRoLWtleT", 2),
        ),
        s(
            "putty key",
            "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key-20240101\nPublic-Lines: 2\nAAAAB3NzaC1yc2EAAAABJQAAAQEAhX\nq83vEjRWeJAx9Kf2\nPrivate-Lines: 2\n{S}\nq83vEjRWeJAx9Kf2b7Q1\nPrivate-MAC: 0a1b2c3d4e5f\n",
            "AAABAQCXk3n9Lq2Wz7Rk2Pq9Zt4WLmQ",
        ),
        s(
            "pgp private key",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{S}\n-----END PGP PRIVATE KEY BLOCK-----\n",
            &rep("lQOYBF", "x7Rk2Pq9Zt4WLmQ", 3),
        ),
        s(
            "ec key",
            "-----BEGIN EC PRIVATE KEY-----\n{S}\n-----END EC PRIVATE KEY-----\n",
            &rep("MHcCAQEEI", "Ox7Rk2Pq9Zt4", 4),
        ),
        // Vendor tokens
        s("openai sk-None", "key: {S}\n", &sk("None")),
        s("openai svcacct", "OPENAI_KEY={S}\n", &sk("svcacct")),
        s("openai proj in prose", "We used {S} in the demo.\n", &sk("proj")),
        s(
            "slack app token",
            "SLACK_APP={S}\n",
            &rep("xapp-1-A0", "12BCDEF34", 2),
        ),
        s(
            "slack bot token in prose",
            "bot token {S} was posted\n",
            &rep("xoxb-", "2409871234-", 2),
        ),
        s("google oauth access token", "token {S}\n", &rep("ya29.", "a0AfH6SMBx7Rk2", 3)),
        s("google refresh token", "refresh {S}\n", &rep("1//0", "gx7Rk2Pq9Zt4WLmQ", 3)),
        s("google client secret", "cs {S}\n", &rep("GOCSPX-", "x7Rk2Pq9Zt4", 3)),
        s("vault token", "token hvs.{S}\n", &rep("", "CAESIx7Rk2Pq9Zt4", 2)),
        s("grafana service account", "use {S}\n", &(rep("glsa_", "x7Rk2Pq9Zt4WLmQa", 2) + "_0a1b2c3d")),
        s("digitalocean token", "do {S}\n", &rep("dop_v1_", "0a1b2c3d", 8)),
        s("shopify token", "shop {S}\n", &rep("shpat_", "0a1b2c3d", 4)),
        s(
            "age secret key",
            "# created\n{S}\n",
            &rep("AGE-SECRET-KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 2)[..74],
        ),
        s("telegram bot token", "bot {S}\n", &rep("123456789:AA", "Gx7Rk2Pq9Zt", 3)),
        s("azure ad client secret", "secret {S}\n", &rep("abc8Q~", "x7Rk2Pq9Zt4W", 3)[..40]),
        s("github pat", "pushed with {S}\n", &rep("ghp_", "x7Rk2Pq9", 4)),
        s("aws key id", "id {S}\n", &(rep("AKIA", "Q3EGXPMLZ7TN", 1) + "4VRB")),
        s("stripe live key", "stripe {S}\n", &rep("sk_live_", "51HxQk2eZvKYlo2C", 2)),
        s("gitlab pat", "gl {S}\n", &rep("glpat-", "Ab1_x", 5)),
        s("huggingface token", "hf {S}\n", &rep("hf_", "AbCd12EfGh", 3)),
        s(
            "npmrc authToken",
            "//registry.npmjs.org/:_authToken={S}\n",
            "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        ),
        s("npmrc _auth", "_auth={S}\nalways-auth=true\n", b64),
        s(
            "azure service bus last field",
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={S}\n",
            "Zm9vYmFyYmF6cXV4+/abc=",
        ),
        s(
            "azure service bus quoted",
            "\"conn\": \"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={S}\"\n",
            "Zm9vYmFyYmF6cXV5+/abc=",
        ),
        s(
            "azure storage account key",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={S};EndpointSuffix=core.windows.net\n",
            "bG9uZ2tleWxvbmdrZXk=",
        ),
        s(
            "netrc",
            "machine api.example.com\n  login bot\n  password {S}\n",
            "netrc-Pw-5",
        ),
        s("jwt", "Authorization: {S}\n", &format!(
            "{}.{}.{}",
            rep("eyJ", "hbGciOiJIUzI1NiJ9", 1),
            rep("eyJ", "zdWIiOiIxMjM0NTY3ODkwIn0", 1),
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
        )),
        // Terraform and HCL
        s("terraform provider", "provider \"aws\" {\n  access_key = \"AKIAEXAMPLE\"\n  secret_key = \"{S}\"\n}\n", "tf-Secret-Key"),
        s("terraform resource password", "resource \"aws_db_instance\" \"db\" {\n  password = \"{S}\"\n}\n", "tf-Db-Pw"),
        s(
            "terraform variable default",
            "variable \"db_password\" {\n  default = \"{S}\"\n}\n",
            "tf-Default-Pw",
        ),
        // SQL, Dockerfiles and more command lines
        s(
            "sql create user",
            "CREATE USER app WITH PASSWORD '{S}';\n",
            "sql-Create-Pw",
        ),
        s(
            "mysql identified by",
            "ALTER USER 'app'@'%' IDENTIFIED BY '{S}';\n",
            "sql-Ident-Pw",
        ),
        s("dockerfile env space", "FROM postgres:16\nENV POSTGRES_PASSWORD {S}\n", "dock-Env-Pw"),
        s("dockerfile env equals", "ENV API_TOKEN={S}\n", "dock-Eq-Tok"),
        s("sqlcmd -P", "sqlcmd -S db -U sa -P '{S}' -Q \"SELECT 1\"\n", "sqlcmd-Pw1"),
        s(
            "az storage account key option",
            "az storage blob list --account-name acct --account-key {S}\n",
            "YWNjb3VudGtleQ+/x==",
        ),
        s("java system property", "java -Ddb.password={S} -jar app.jar\n", "jvm-Prop-Pw"),
        s("helm set", "helm install db bitnami/postgresql --set auth.password={S}\n", "helm-Set-Pw"),
        s(
            "kubectl from-literal",
            "kubectl create secret generic db --from-literal=password={S}\n",
            "kube-Lit-Pw",
        ),
        s("docker run -e", "docker run -e POSTGRES_PASSWORD={S} postgres\n", "dock-Run-Pw"),
        s(
            "discord webhook",
            "hook: {S}\n",
            &rep("https://discord.com/api/webhooks/123456789012345678/", "Ab3xYz9Q_k", 4),
        ),
        s(
            "docker auth without digits",
            "{\"auths\": {\"ghcr.io\": {\"auth\": \"{S}\"}}}\n",
            "dXNlcjpwYXNz",
        ),
        s("go struct field", "cfg := Config{\n\tPassword: \"{S}\",\n}\n", "go-Field-Pw"),
        s("ruby config", "config.api_key = '{S}'\n", "rb-Cfg-Key"),
        s(
            "json base64 line-split value",
            "\"private_key\": \"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\"\n",
            "BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
        ),
        s(
            "yaml quoted line-split value",
            "token: \"abcdefgh12345678\n  {S}\"\n",
            "ijklmnop90123456",
        ),
        s("yaml binary block", "secret: !!binary |\n  {S}\n", "c2VjcmV0LXZhbHVlLTEyMw=="),
        s("httpie header", "http GET api.example.com Authorization:\"Token {S}\"\n", "httpie0a1b2c3d"),
        // Known misses
        s("pgpass line", "db.internal:5432:app:app:{S}\n", "pgpass-Pw"),
        s("prose sentence", "The staging password is {S} until Friday.\n", "Stag1ng-Pw"),
    ]
}

/// Prose and configuration that name secrets without holding one.
const NEAR_MISSES: [&str; 73] = [
    "Set `max_tokens: 1500` in the config.",
    "max_tokens: 1500\ntemperature: 0.2",
    "api_key_env: OPENAI_API_KEY",
    "The token budget is 4000 per meeting; the password policy asks for 12 characters.",
    "Password: see the vault",
    "Password: required",
    "token: <your-token>",
    "api_key: ${OPENAI_API_KEY}",
    "password: \"{{ vault_db_password }}\"",
    "secret: !Ref DbSecret",
    "password: null\ntoken: ~\npassword: ''",
    "the PWD=/home/me variable",
    "passwordless: true\npassword_min_length: 12\ntoken_count = 12",
    "secret_santa: alice",
    "The API key lives in the vault; never paste it here.",
    "Authorization: Basic auth is disabled.",
    "curl -H 'Accept: application/json' https://example.com",
    "curl -u \"$USER:$PASS\" https://example.com",
    "mysql -u root -p app",
    "mysql -P 3306 -h db",
    "docker run -u 1000:1000 image",
    "git push -u origin main",
    "https://example.com:8443/path and postgres://localhost:5432/app",
    "npm install @scope/pkg@1.2.3",
    "Mail a.b@example.com or ssh git@github.com:org/repo.git",
    "http://user@host/path",
    "sort_key: created_at\nprimary_key: id",
    "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "cache_key = \"user:42\"",
    "forgot_password: \"Forgot your password?\"",
    "token_type: bearer",
    "password = os.getenv('DB_PASSWORD')",
    "api_key = settings.OPENAI_API_KEY",
    "password = getpass.getpass()",
    "token = request.headers.get('X-Token')",
    "if password == '':\n    raise ValueError",
    "secret = None",
    "def check_password(password: str) -> bool:",
    "fn new(token: &str) -> Self {",
    "const token = await getToken();",
    "export const API_KEY_HEADER = 'X-Api-Key';",
    "X-Api-Key: required",
    "Use the --token flag to pass it.",
    "docker login --password-stdin",
    "kubectl create secret generic db --from-literal=password=$DB_PASS",
    "The key: consistency matters.",
    "Secrets: none",
    "secrets: inherit",
    "tokenizer: cl100k_base",
    "auth: none\nauth: oauth2\nauth: true",
    "password_hash: $2b$12$abcdefghijk",
    "`--no-redact` is dangerous",
    "Use sk-learn; the sk-1234 key is a demo.",
    "Access key ID and secret access key are created in IAM.",
    "Name,Email,Role\nalice,a@x.com,admin",
    "column,type\npassword,varchar(64)",
    "user,password_hint\nalice,dog name",
    "<password>${DB_PASSWORD}</password>",
    "<input type=\"password\" name=\"password\">",
    "ya29 is the prefix of Google access tokens; xapp- starts Slack app tokens.",
    "The PuTTY-User-Key-File-3 header starts a .ppk file.",
    "---- BEGIN SSH2 PUBLIC KEY ----\nComment: x\nAAAAB3NzaC1yc2EAAAADAQABAAABAQ\n---- END SSH2 PUBLIC KEY ----",
    "password:\n  min_length: 12",
    "CREATE USER app WITH PASSWORD :pw;",
    "ENV PATH /usr/local/bin:$PATH\nENV DB_PASSWORD_FILE /run/secrets/db",
    "aws s3 cp --sse-kms-key-id alias/x s3://b/k",
    "tokens: 1500",
    "Every password must be rotated yearly, the password is never written down.",
    "We discussed the API key, the token",
    "password = \"…\" and api_key=…",
    "client = OpenAI(api_key=os.environ[\"OPENAI_API_KEY\"])",
    "headers = {\"Authorization\": f\"Bearer {token}\"}",
    "password: ********\napi_key: xxxxxxxx",
];

#[test]
fn the_corpus_is_redacted_and_near_misses_are_kept() {
    let samples = corpus();
    let mut failures = Vec::new();
    let mut redacted = 0;
    for sample in &samples {
        let out = redact(&sample.text).text;
        let leaked: Vec<&String> = sample
            .secrets
            .iter()
            .filter(|x| out.contains(x.as_str()))
            .collect();
        let known = KNOWN_MISSES.contains(&sample.label);
        if leaked.is_empty() && out.contains("[REDACTED:") {
            redacted += 1;
            if known {
                failures.push(format!(
                    "{}: a known miss is now redacted, update KNOWN_MISSES",
                    sample.label
                ));
            }
        } else if !known {
            failures.push(format!("{}: leaked {leaked:?} in {out:?}", sample.label));
        }
    }
    for text in NEAR_MISSES {
        let r = redact(text);
        if r.text != text {
            failures.push(format!("near miss changed: {text:?} -> {:?}", r.text));
        }
    }
    let n = samples.len();
    eprintln!(
        "redaction corpus: {redacted}/{n} samples redacted ({:.1}%), {} near misses kept",
        100.0 * redacted as f64 / n as f64,
        NEAR_MISSES.len()
    );
    assert!(n >= 150 && NEAR_MISSES.len() >= 50);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// This repository's own documentation, code, prompts, agents and meetings hold no secret:
/// redacting them changes nothing, except in the secret-shaped fixtures of unit tests.
#[test]
fn the_repository_s_own_files_are_not_redacted() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut dirs: Vec<std::path::PathBuf> = ["docs", "src", "share", "agents", "meetings"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut found = Vec::new();
    for file in &files {
        let Ok(mut text) = std::fs::read_to_string(file) else {
            continue;
        };
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // Unit tests (the redactor's, the transport's URL masking) hold secret-shaped
        // fixtures on purpose.
        if rel.starts_with("src/") && rel.ends_with(".rs") {
            text.truncate(text.find("#[cfg(test)]").unwrap_or(text.len()));
        }
        let r = redact(&text);
        for (kind, range) in &r.markers {
            let line = r.text[..range.start].matches('\n').count() + 1;
            let start = r.text[..range.start].rfind('\n').map_or(0, |i| i + 1);
            let end = r.text[range.end..]
                .find('\n')
                .map_or(r.text.len(), |i| range.end + i);
            found.push(format!("{rel}:{line}: {kind}: {}", &r.text[start..end]));
        }
    }
    assert!(files.len() > 50, "{} files", files.len());
    assert!(
        found.is_empty(),
        "{} redactions:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The meeting file's own text reaches every prompt, so it passes the same filter as the
/// documents, and stderr says so; `--no-redact` leaves it as written.
#[test]
fn the_brief_and_decision_packet_are_redacted() {
    use crate::harness::Workdir;
    let w = Workdir::new();
    let token = rep("ghp_", "x7Rk2Pq9", 4);
    let m = w.write(
        "m.yaml",
        format!(
            "topic: Move CI\nbrief:\n  current_state: \"CI logs in with password: Br1ef-Pw-77\"\n  constraints: [\"keep {token} working\"]\ndecision_packet:\n  decision_to_make: Which CI?\n  options: [\"GitHub with DB_PASSWORD=Opt-Pw-99\", \"GitLab\"]\n"
        ),
    );
    let out = w.cli("collect-context").arg("--meeting-file").arg(&m).run();
    let v: serde_json::Value = out.success().json();
    let json = v.to_string();
    for secret in ["Br1ef-Pw-77", "Opt-Pw-99", token.as_str()] {
        assert!(
            !json.contains(secret),
            "{secret} reached the packet: {json}"
        );
    }
    let input = &v["meeting_input"];
    assert_eq!(
        input["brief"]["current_state"],
        "CI logs in with password: [REDACTED:secret-assignment]"
    );
    assert_eq!(
        input["decision_packet"]["options"][0],
        "GitHub with DB_PASSWORD=[REDACTED:secret-assignment]"
    );
    assert!(v["context_bundle"]["summary"]
        .as_str()
        .unwrap()
        .contains("keep [REDACTED:github-token] working"));
    out.stderr_has(
        "collect-context: meeting topic, brief and decision packet: 3 secrets redacted (secret-assignment, github-token)\n",
    );

    let out = w
        .cli("collect-context")
        .arg("--meeting-file")
        .arg(&m)
        .arg("--no-redact")
        .run();
    let json = out.success().json::<serde_json::Value>().to_string();
    assert!(json.contains("Br1ef-Pw-77") && json.contains(&token));
}
