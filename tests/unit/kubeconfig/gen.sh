#!/bin/sh
# Regenerates the kubeconfig test fixtures: a throwaway EC P-256 CA, a client certificate it
# signed (k3s's shape: leaf plus CA in client-certificate-data) and its key. Test-only keys.
set -eu
cd "$(dirname "$0")"
t=$(mktemp -d)
openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
openssl req -x509 -new -key ca.key -subj /CN=k3s-client-ca -days 3650 -out ca.crt
openssl ecparam -name prime256v1 -genkey -noout -out client.key
openssl req -new -key client.key -subj "/O=system:masters/CN=system:admin" -out "$t/client.csr"
openssl x509 -req -in "$t/client.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
	-out "$t/leaf.crt" 2>/dev/null
cat "$t/leaf.crt" ca.crt > client.crt
rm -f ca.key ca.srl
rm -rf "$t"
printf 'SECRETTOKEN-from-file-0123456789\n' > token
ca=$(base64 -w0 ca.crt) cert=$(base64 -w0 client.crt) key=$(base64 -w0 client.key)

cat > k3s.yaml <<K3S
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: $ca
    server: https://127.0.0.1:6443
  name: default
contexts:
- context:
    cluster: default
    user: default
  name: default
current-context: default
kind: Config
preferences: {}
users:
- name: default
  user:
    client-certificate-data: $cert
    client-key-data: $key
K3S

cat > kubeconfig.json <<JSON
{
  "apiVersion": "v1",
  "kind": "Config",
  "clusters": [
    {"name": "prod", "cluster": {"server": "https://10.0.0.1:6443/prefix", "certificate-authority-data": "$ca", "tls-server-name": "api.prod.example"}}
  ],
  "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "admin\\u00e9", "namespace": "kube-system"}}],
  "current-context": "prod",
  "preferences": {},
  "users": [
    {"name": "other", "user": {"exec": {"command": "aws", "args": ["eks", "get-token"]}}},
    {"name": "admin\\u00e9", "user": {"client-certificate-data": "$cert", "client-key-data": "$key", "token": "SECRETTOKEN-json-inline"}}
  ]
}
JSON
