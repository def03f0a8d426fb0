"""Per-run TLS material for the stand-in API server, made with the openssl CLI.

Everything lands in one temporary directory that the caller owns and removes.
All keys are EC P-256 (k3s writes the same kind, and they are quick to make).

Made:
  ca.crt/ca.key            the CA the binary is told to trust
  server.crt/.key          signed by ca: DNS:localhost, IP:127.0.0.1
  ca2.crt, wrongca.crt/.key another CA, and a server cert (same names) signed by it
  othername.crt/.key       signed by ca: DNS:other.example only
  otherip.crt/.key         signed by ca: IP:127.0.0.2 only
  dnsip.crt/.key           signed by ca: DNS:127.0.0.1 (an IP spelled as a DNS name, no IP SAN)
  client-ca.crt/.key       the CA the server trusts for client certificates
  client.crt               leaf (CN=system:admin, O=system:masters) followed by client-ca, as k3s writes
  client.key               SEC1 "EC PRIVATE KEY", as k3s writes
  client-leaf.crt          the leaf alone
"""
import os
import subprocess


def _run(args, cwd):
    subprocess.run(["openssl"] + args, cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _key(d, name):
    _run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", name + ".key"], d)


def _ca(d, name, cn):
    _key(d, name)
    _run(["req", "-x509", "-new", "-key", name + ".key", "-sha256", "-days", "30",
          "-subj", "/CN=" + cn, "-out", name + ".crt",
          "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"], d)


def _leaf(d, name, ca, subj, san, usage):
    _key(d, name)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=%s\n" % usage)
        if san:
            f.write("subjectAltName=%s\n" % san)
    _run(["req", "-new", "-key", name + ".key", "-subj", subj, "-out", name + ".csr"], d)
    _run(["x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
          "-CAcreateserial", "-days", "30", "-sha256", "-extfile", name + ".ext",
          "-out", name + ".crt"], d)


def make_certs(d):
    """Create every file above in directory d (which must exist). Returns d."""
    _ca(d, "ca", "standin-server-ca@1")
    _ca(d, "ca2", "standin-other-ca@2")
    _ca(d, "client-ca", "standin-client-ca@3")
    _leaf(d, "server", "ca", "/O=standin/CN=kube-apiserver", "DNS:localhost,IP:127.0.0.1", "serverAuth")
    _leaf(d, "wrongca", "ca2", "/O=standin/CN=kube-apiserver", "DNS:localhost,IP:127.0.0.1", "serverAuth")
    _leaf(d, "othername", "ca", "/CN=other.example", "DNS:other.example", "serverAuth")
    _leaf(d, "otherip", "ca", "/CN=otherip", "IP:127.0.0.2", "serverAuth")
    _leaf(d, "dnsip", "ca", "/CN=127.0.0.1", "DNS:127.0.0.1", "serverAuth")
    _leaf(d, "client-leaf", "client-ca", "/O=system:masters/CN=system:admin", "", "clientAuth")
    os.rename(os.path.join(d, "client-leaf.key"), os.path.join(d, "client.key"))
    with open(os.path.join(d, "client.crt"), "wb") as out:
        for n in ("client-leaf.crt", "client-ca.crt"):
            with open(os.path.join(d, n), "rb") as f:
                out.write(f.read())
    return d
