"""What `./build.sh dist` and `image` ship beside the binaries: the SBOMs, the OCI annotations,
the CHANGELOG. One check a call (run.sh counts each):

  check_dist.py sbom VERSION DIST TAR          SPDX 2.3 per binary: noderecover and musl, BearSSL,
                                               jsmn with the versions dpkg has and their licences;
                                               the image's layer carries the same file
  check_dist.py annotations VERSION TAR        org.opencontainers.image.* on the index and on
                                               every manifest
  check_dist.py changelog VERSION DIST         CHANGELOG.md shipped, with a section for VERSION
"""
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile

ARCHES = ("amd64", "arm64", "armhf")
LINKED = {"musl": "musl-dev", "BearSSL": None, "jsmn": "libjsmn-dev"}   # name -> the Debian package dpkg knows
SPDX_ID = re.compile(r"^SPDXRef-[A-Za-z0-9.-]+$")


def dpkg_version(pkg):
    return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True,
                          check=True).stdout


def blobs(tar):
    with tarfile.open(tar) as t:
        top = json.load(t.extractfile("index.json"))

        def blob(digest):
            return t.extractfile("blobs/sha256/" + digest.split(":")[1]).read()
        index = json.loads(blob(top["manifests"][0]["digest"]))
        manifests = [(m["platform"], json.loads(blob(m["digest"]))) for m in index["manifests"]]
        layers = {}
        for plat, m in manifests:
            data = blob(m["layers"][0]["digest"])
            with tarfile.open(fileobj=io.BytesIO(data)) as lt:
                layers[plat["architecture"]] = {n: lt.extractfile(n).read() for n in lt.getnames()}
        return index, manifests, layers


def check_sbom(version, dist, tar):
    _, _, layers = blobs(tar)
    for a in ARCHES:
        binp = os.path.join(dist, "noderecover-%s-linux-%s" % (version, a))
        path = binp + ".spdx.json"
        with open(path, "rb") as f:
            raw = f.read()
        doc = json.loads(raw)
        assert doc["spdxVersion"] == "SPDX-2.3" and doc["dataLicense"] == "CC0-1.0", doc
        assert doc["SPDXID"] == "SPDXRef-DOCUMENT" and doc["name"] and doc["documentNamespace"].startswith("https://"), doc
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", doc["creationInfo"]["created"]), doc["creationInfo"]
        assert doc["creationInfo"]["creators"], doc["creationInfo"]
        ids = set()
        pk = {}
        for p in doc["packages"]:
            assert SPDX_ID.match(p["SPDXID"]) and p["SPDXID"] not in ids, p
            ids.add(p["SPDXID"])
            for k in ("name", "versionInfo", "downloadLocation", "licenseConcluded", "licenseDeclared", "copyrightText"):
                assert p.get(k), (k, p)
            assert p["filesAnalyzed"] is False, p
            pk[p["name"]] = p
        with open(binp, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        me = pk["noderecover"]
        assert me["versionInfo"] == version and me["licenseDeclared"] == "ISC", me
        assert me["checksums"] == [{"algorithm": "SHA256", "checksumValue": digest}], me
        assert doc["documentDescribes"] == [me["SPDXID"]], doc["documentDescribes"]
        for name, deb in LINKED.items():
            p = pk[name]
            want = dpkg_version("%s:%s" % (deb, a) if deb == "musl-dev" else deb) if deb else dpkg_version("libbearssl-dev")
            assert p["versionInfo"] == want, (name, p["versionInfo"], want)
            assert p["licenseDeclared"] == "MIT", p
            refs = {r["referenceType"]: r["referenceLocator"] for r in p["externalRefs"]}
            assert refs["purl"].startswith("pkg:deb/debian/") and ("@" + want) in refs["purl"], refs
            assert refs["cpe23Type"].startswith("cpe:2.3:a:"), refs
        rels = {(r["spdxElementId"], r["relationshipType"], r["relatedSpdxElement"]) for r in doc["relationships"]}
        for r in rels:
            assert r[0] in ids | {"SPDXRef-DOCUMENT"} and r[2] in ids, r
        for name in LINKED:
            assert (pk[name]["SPDXID"], "STATIC_LINK", me["SPDXID"]) in rels, (name, rels)
        arch = {"armhf": "arm"}.get(a, a)
        assert layers[arch].get("noderecover.spdx.json") == raw, "%s: the image's /noderecover.spdx.json differs" % a
        print("%s: %s" % (a, ", ".join("%s %s (%s)" % (n, pk[n]["versionInfo"], pk[n]["licenseDeclared"]) for n in pk)))


def check_annotations(version, tar):
    index, manifests, _ = blobs(tar)
    want = {"org.opencontainers.image.version": version, "org.opencontainers.image.title": "noderecover",
            "org.opencontainers.image.licenses": "ISC"}
    for where, a in [("index", index.get("annotations") or {})] + [
            ("manifest %s" % p["architecture"], m.get("annotations") or {}) for p, m in manifests]:
        print(where, a)
        for k, v in want.items():
            assert a.get(k) == v, (where, k, a)
        assert a.get("org.opencontainers.image.source", "").startswith("https://"), (where, a)
        assert a.get("org.opencontainers.image.description"), (where, a)
        # only when the build was told it (NODERECOVER_REVISION, SOURCE_DATE_EPOCH): never guessed
        assert ("org.opencontainers.image.revision" in a) == bool(os.environ.get("NODERECOVER_REVISION")), (where, a)


def check_changelog(version, dist):
    with open(os.path.join(dist, "CHANGELOG.md")) as f:
        text = f.read()
    assert re.search(r"^## %s\b" % re.escape(version), text, re.M), "no section for %s" % version
    with open(os.path.join(dist, "SHA256SUMS")) as f:
        assert re.search(r"\sCHANGELOG.md$", f.read(), re.M), "CHANGELOG.md is not in SHA256SUMS"


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "sbom":
        check_sbom(*sys.argv[2:5])
    elif what == "annotations":
        check_annotations(*sys.argv[2:4])
    elif what == "changelog":
        check_changelog(*sys.argv[2:4])
    else:
        sys.exit("unknown check %s" % what)
