#!/bin/sh
# mkcerts.sh DIR: the certificates test_http uses, made fresh each run so none expire.
# EC P-256 like k3s, plus RSA ones for the RSA code paths. Keys are throwaway test keys.
set -eu
cd "$1"
exec 2>openssl.log
ec() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key"; }     # "EC PRIVATE KEY"
rsa() { openssl genrsa -traditional -out "$1.key" 2048; }                   # "RSA PRIVATE KEY"
ca() { openssl req -x509 -new -key "$1.key" -subj "/CN=$1" -days 30 -out "$1.crt"; }
# leaf NAME CA SAN EKU [DAYS]
leaf() {
	openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
	printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' \
		"$3" "$4" > "$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days "${5:-30}" \
		-out "$1.crt" -extfile "$1.ext"
	openssl x509 -in "$1.crt" -outform DER -out "$1.der"
}
# leafx NAME CA "EXTENSION LINES": a leaf with exactly the extensions given (printf format)
leafx() {
	openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
	printf "$3" > "$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 30 \
		-out "$1.crt" -extfile "$1.ext"
	openssl x509 -in "$1.crt" -outform DER -out "$1.der"
}
ec ca; ca ca
ec other; ca other
ec ip; leaf ip ca "IP:127.0.0.1,IP:::1,DNS:api.example" serverAuth
ec ip2; leaf ip2 ca "IP:127.0.0.2,DNS:127.0.0.1" serverAuth
ec dns; leaf dns ca "DNS:localhost" serverAuth
ec foreign; leaf foreign other "IP:127.0.0.1" serverAuth
ec old; leaf old ca "IP:127.0.0.1" serverAuth -1
rsa rsaca; ca rsaca
rsa rsaip; leaf rsaip rsaca "IP:127.0.0.1" serverAuth
# k3s style client: EC key, chain of leaf and its CA
ec clientca; ca clientca
ec client; leaf client clientca "DNS:client" clientAuth
cat client.crt clientca.crt > client-chain.crt
openssl pkcs8 -topk8 -nocrypt -in client.key -out client.p8
openssl pkcs8 -topk8 -v2 aes-128-cbc -passout pass:x -in client.key -out client-enc.p8
# an RSA client key under an RSA CA, so the issuer key type is RSA
rsa rsaclient; leaf rsaclient rsaca "DNS:rsaclient" clientAuth
cat ca.crt rsaca.crt > bundle.crt
# the rules client-go keeps and BearSSL alone does not: no CN fallback, EKU must allow a server
ec localhost; openssl req -new -key localhost.key -subj "/CN=localhost" -out localhost.csr
printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > localhost.ext
openssl x509 -req -in localhost.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -out nosan.crt -extfile localhost.ext
openssl x509 -in nosan.crt -outform DER -out nosan.der
cp localhost.key nosan.key
ec clientonly; leaf clientonly ca "IP:127.0.0.1,DNS:localhost" clientAuth
ec bothuse; leaf bothuse ca "IP:127.0.0.1,DNS:localhost" clientAuth,serverAuth
ec anyuse; leaf anyuse ca "IP:127.0.0.1,DNS:localhost" anyExtendedKeyUsage
ec noeku; leafx noeku ca 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n'
ec wild; leaf wild ca "DNS:*.example.test" serverAuth
# an intermediate CA between the configured CA and the server
ec inter; leafx inter ca 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n'
ec viainter; leaf viainter inter "IP:127.0.0.1" serverAuth
cat viainter.crt inter.crt > viainter-chain.crt
