#!/bin/sh
# build.sh [build|dist|chart|image|deploy|test|demo|bench|bytes|unit|sim [SEED [COUNT]]|sim-election [SEED [COUNT]]|standin|e2e|helm|monitoring|vm|soak [MINUTES]|asan|image-test|clean]
# Installs what the build needs (Debian 12, as root), builds BearSSL 0.6 from Debian's source
# package with musl, and links build/noderecover static; dist cross-builds the same sources for
# amd64, arm64 and armhf, image packs them into one OCI archive. See README.md.
set -eu
cd "$(dirname "$0")"
top=$(pwd)

B=build
DEPS=$B/deps
BEARSSL=$DEPS/bearssl
LIB="access.c clock.c completion.c core.c decide.c election.c events.c fence.c fence_rules.c fencewait.c follow.c http.c http_parse.c tls.c json.c json_list.c json_scan.c json_write.c kube.c kubeconfig.c yaml.c lease.c listen.c manifests.c metrics.c pass.c peer.c plan.c plugin.c policy.c say.c settings.c table.c target.c text.c"
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror=implicit-function-declaration -Werror"
# The compile line every build of our sources starts with: C11 with POSIX, threads (the
# listener's), the warnings, BearSSL's and jsmn's headers. Each build adds only its own flags
# (size and static link, sanitizers, the tests' paths). bench/run.sh reads this line.
CFLAGS_BASE="-std=c11 -D_DEFAULT_SOURCE -pthread $WARN -I/usr/include/bearssl -I$DEPS/include"
# What the unit tests are built with besides: their fixtures' paths, and the tests' own headers.
UNIT_FLAGS="-DSETTINGS_SA_DIR=\"sa\" -DSETTINGS_K3S_KUBECONFIG=\"kubeconfig/k3s.yaml\" -I."
# The sanitizer builds' (unit tests, the -asan binary).
SAN_FLAGS="-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all"
VERSION=$(cat VERSION 2>/dev/null || echo 0.1.0)
# The one image reference: the OCI archive names itself so, and `noderecover manifests` puts it
# in the Deployment.
IMAGE=${NODERECOVER_IMAGE:-ghcr.io/exadev/noderecover:$VERSION}
DIST=$B/dist
# Where the source is published, for the image's annotations and the SBOM.
SOURCE_URL=${NODERECOVER_SOURCE_URL:-https://github.com/exadev/noderecover}
CHART=deploy/helm/noderecover
ARCHES="amd64 arm64 armhf"

say() { printf '%s\n' "build.sh: $*" >&2; }

# Debian packages: musl for the static link, jsmn's header, BearSSL's headers and source
# package, and the tools the tests use.
need_packages() {
	missing=
	command -v musl-gcc >/dev/null 2>&1 || missing="$missing musl-tools"
	[ -f /usr/include/jsmn.h ] || missing="$missing libjsmn-dev"
	[ -f /usr/include/bearssl.h ] || missing="$missing libbearssl-dev"
	command -v dpkg-source >/dev/null 2>&1 || missing="$missing dpkg-dev"
	command -v gcc >/dev/null 2>&1 || missing="$missing gcc"
	command -v python3 >/dev/null 2>&1 || missing="$missing python3"
	command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
	command -v file >/dev/null 2>&1 || missing="$missing file"
	command -v xz >/dev/null 2>&1 || missing="$missing xz-utils"
	command -v zsh >/dev/null 2>&1 || missing="$missing zsh"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# BearSSL from Debian's source package, compiled with a musl-gcc wrapper (ARCH's, or the native
# one): Debian's libbearssl.a is built against glibc's fortified string functions (__memcpy_chk,
# ...) that musl does not have. No unwind tables: C without exceptions never unwinds, and they
# were 12 KB of the binary. Never -flto here: BearSSL keeps some constant-time helpers (br_ccopy)
# in files of their own so that no compiler sees through them. A library built with other flags
# is built again. bearssl [ARCH]: the native one in $BEARSSL, others beside it.
BEARSSL_CFLAGS="-Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables"
bearssl() {
	arch=${1:-}
	lib=$BEARSSL${arch:+-$arch}
	[ -f "$lib/libbearssl.a" ] && [ "$(cat "$lib/cflags" 2>/dev/null)" = "$BEARSSL_CFLAGS" ] && return 0
	rm -rf "$lib"
	if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
		say "adding Debian's bookworm source index (deb-src) for BearSSL's source package"
		cat > /etc/apt/sources.list.d/noderecover-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		apt-get update -qq
	fi
	if ! ls -d "$DEPS"/src/bearssl-*/ >/dev/null 2>&1; then
		rm -rf "$DEPS/src" && mkdir -p "$DEPS/src"
		(cd "$DEPS/src" && apt-get source -qq bearssl >/dev/null 2>&1) || {
			say "apt-get source bearssl failed"; exit 1; }
	fi
	src=$(ls -d "$DEPS"/src/bearssl-*/ | head -n 1)
	cc=$(musl_cc "$arch")
	say "building BearSSL with $cc from $src"
	mkdir -p "$lib"
	make -s -C "$src" -j2 lib CC="$cc" AR="$(gnu_tool "$arch" ar)" BUILD="$top/$lib/out" \
		CFLAGS="$BEARSSL_CFLAGS" >/dev/null
	cp "$lib/out/libbearssl.a" "$lib/libbearssl.a"
	echo "$BEARSSL_CFLAGS" > "$lib/cflags"
}

# musl-gcc does not search /usr/include (glibc's); jsmn's header is linked in on its own.
deps() {
	need_packages
	bearssl
	mkdir -p $DEPS/include
	ln -sf /usr/include/jsmn.h $DEPS/include/jsmn.h
}

# Debian's architecture names to the musl-gcc wrapper (musl-dev:ARCH ships it) and the GNU
# triplet of its cross gcc and binutils. No argument: the native ones.
triplet() {
	case $1 in
	amd64) echo x86_64-linux-gnu ;;
	arm64) echo aarch64-linux-gnu ;;
	armhf) echo arm-linux-gnueabihf ;;
	*) say "unknown architecture $1 (want one of $ARCHES)"; exit 2 ;;
	esac
}
native_arch() { dpkg --print-architecture; }
musl_cc() {
	if [ -z "${1:-}" ] || [ "$1" = "$(native_arch)" ]; then echo musl-gcc; return; fi
	case $1 in
	armhf) echo arm-linux-musleabihf-gcc ;;
	*) echo "$(triplet "$1" | sed 's/-gnu$/-musl/')-gcc" ;;
	esac
}
gnu_tool() {
	if [ -z "${1:-}" ] || [ "$1" = "$(native_arch)" ]; then echo "$2"; else echo "$(triplet "$1")-$2"; fi
}

# Cross compilers for every architecture but the native one: Debian's gcc-TRIPLET with
# musl-dev:ARCH (whose wrapper points that gcc at musl), and qemu-user-static to run them.
need_cross() {
	missing=
	for a in $ARCHES; do
		[ "$a" = "$(native_arch)" ] && continue
		command -v "$(musl_cc "$a")" >/dev/null 2>&1 || missing="$missing musl-dev:$a"
		command -v "$(triplet "$a")-gcc" >/dev/null 2>&1 || missing="$missing gcc-$(triplet "$a" | tr _ -)"
		dpkg --print-foreign-architectures | grep -qx "$a" || { say "adding foreign architecture $a"; dpkg --add-architecture "$a"; }
	done
	command -v qemu-aarch64-static >/dev/null 2>&1 || missing="$missing qemu-user-static"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# compile CC BEARSSL_DIR OUT [FLAG...]: the static, stripped binary: musl, BearSSL, -Os, unused
# sections dropped; FLAGs are added (a link map for bench/bytes.sh). The same line for every
# architecture. For size: link-time optimization across our files (one partition: the same bytes
# every build); position-dependent code, as the binary is static and not PIE; one read-only
# executable segment for headers, code and constants (-z noseparate-code: a second one costs up
# to a page, 64 KiB on arm64); no RELRO, which musl's static start-up never applies, so its page
# alignment bought nothing, and the data segment packed after the code (common-page-size).
compile() {
	cc=$1 lib=$2 out=$3
	shift 3
	"$cc" $CFLAGS_BASE -Os -DNODERECOVER_VERSION="\"$VERSION\"" -DNODERECOVER_IMAGE="\"$IMAGE\"" \
		-ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables \
		-flto -flto-partition=one -fno-pie -no-pie -static -s -Wl,--gc-sections \
		-Wl,-z,noseparate-code -Wl,-z,norelro -Wl,-z,common-page-size=64 \
		"$@" -o "$out" noderecover.c $LIB "$lib/libbearssl.a"
}

build() {
	deps
	mkdir -p $B
	compile musl-gcc $BEARSSL $B/noderecover -Wl,-Map=$B/noderecover.map
	say "built $B/noderecover ($(wc -c < $B/noderecover) bytes)"
}

# The time stamped on what dist makes: SOURCE_DATE_EPOCH (reproducible-builds.org) or 1970, so
# two builds of the same sources are byte-identical.
stamp() { date -u -d "@${SOURCE_DATE_EPOCH:-0}" +%Y-%m-%dT%H:%M:%SZ; }

# A Debian package's version (dpkg-query; NAME:ARCH for another architecture's).
deb_version() { dpkg-query -W -f '${Version}' "$1"; }
# The licence of a Debian copyright file's "Files: *" stanza (DEP-5), as an SPDX identifier.
deb_licence() {
	l=$(awk '/^Files: *\*[ \t]*$/ { f = 1; next } f && /^License:/ { print $2; exit }' "$1")
	case $l in Expat) echo MIT ;; "") echo NOASSERTION ;; *) echo "$l" ;; esac
}
# The upstream part of a Debian version: 0.6+dfsg.1-3 -> 0.6, 1.2.3-1 -> 1.2.3.
upstream() { echo "$1" | sed -e 's/-[^-]*$//' -e 's/+dfsg.*//' -e 's/^[0-9]*://'; }

# sbom ARCH BINARY OUT: an SPDX 2.3 JSON document for one binary: noderecover and what is
# statically linked into it (musl, BearSSL, jsmn), each with the version of the Debian package
# the build used (dpkg for musl-dev:ARCH and libjsmn-dev, BearSSL's source package's changelog),
# its licence from that package's copyright file, a purl and a CPE for scanners (Trivy, Grype).
sbom() {
	a=$1 bin=$2 out=$3
	src=$(ls -d "$DEPS"/src/bearssl-*/ | head -n 1)
	musl=$(deb_version "musl-dev:$a") jsmn=$(deb_version libjsmn-dev)
	bearssl=$(sed -n '1s/^bearssl (\([^)]*\)).*/\1/p' "$src/debian/changelog")
	[ -n "$musl" ] && [ -n "$jsmn" ] && [ -n "$bearssl" ] || { say "sbom: a version is missing (musl '$musl', BearSSL '$bearssl', jsmn '$jsmn')"; exit 1; }
	dlic=$(deb_licence /usr/share/doc/musl-dev/copyright) blic=$(deb_licence "$src/debian/copyright")
	jlic=$(deb_licence /usr/share/doc/libjsmn-dev/copyright) own=$(head -n 1 LICENSE | awk '{print $1}')
	d=$(sha "$bin")
	# pkg ID NAME VERSION LICENCE DOWNLOAD PURL CPE_VENDOR:CPE_PRODUCT [SUPPLIER]
	pkg() {
		printf '{"SPDXID":"SPDXRef-Package-%s","name":"%s","versionInfo":"%s","supplier":"%s","downloadLocation":"%s","filesAnalyzed":false,"licenseConcluded":"%s","licenseDeclared":"%s","copyrightText":"NOASSERTION","externalRefs":[{"referenceCategory":"PACKAGE-MANAGER","referenceType":"purl","referenceLocator":"%s"},{"referenceCategory":"SECURITY","referenceType":"cpe23Type","referenceLocator":"cpe:2.3:a:%s:%s:%s:*:*:*:*:*:*:*"}]}' \
			"$1" "$2" "$3" "${8:-Organization: Debian}" "$5" "$4" "$4" "$6" "${7%%:*}" "${7#*:}" "$(upstream "$3")"
	}
	{
		printf '{"spdxVersion":"SPDX-2.3","dataLicense":"CC0-1.0","SPDXID":"SPDXRef-DOCUMENT","name":"noderecover-%s-linux-%s",' "$VERSION" "$a"
		printf '"documentNamespace":"%s/spdx/noderecover-%s-linux-%s-%s",' "$SOURCE_URL" "$VERSION" "$a" "$d"
		printf '"creationInfo":{"created":"%s","creators":["Tool: noderecover build.sh"]},' "$(stamp)"
		printf '"documentDescribes":["SPDXRef-Package-noderecover"],"packages":['
		printf '{"SPDXID":"SPDXRef-Package-noderecover","name":"noderecover","versionInfo":"%s","supplier":"NOASSERTION","downloadLocation":"%s","filesAnalyzed":false,"packageFileName":"noderecover-%s-linux-%s","checksums":[{"algorithm":"SHA256","checksumValue":"%s"}],"licenseConcluded":"%s","licenseDeclared":"%s","copyrightText":"NOASSERTION","primaryPackagePurpose":"APPLICATION","externalRefs":[{"referenceCategory":"PACKAGE-MANAGER","referenceType":"purl","referenceLocator":"pkg:generic/noderecover@%s?arch=%s"}]},' \
			"$VERSION" "$SOURCE_URL" "$VERSION" "$a" "$d" "$own" "$own" "$VERSION" "$a"
		pkg musl musl "$musl" "$dlic" "https://musl.libc.org/" "pkg:deb/debian/musl-dev@$musl?arch=$a&distro=debian-12" "musl-libc:musl"
		printf ','
		pkg bearssl BearSSL "$bearssl" "$blic" "https://bearssl.org/" "pkg:deb/debian/bearssl@$bearssl?arch=source&distro=debian-12" "bearssl:bearssl"
		printf ','
		pkg jsmn jsmn "$jsmn" "$jlic" "https://github.com/zserge/jsmn" "pkg:deb/debian/libjsmn-dev@$jsmn?arch=all&distro=debian-12" "jsmn_project:jsmn"
		printf '],"relationships":[{"spdxElementId":"SPDXRef-DOCUMENT","relationshipType":"DESCRIBES","relatedSpdxElement":"SPDXRef-Package-noderecover"}'
		for p in musl bearssl jsmn; do
			printf ',{"spdxElementId":"SPDXRef-Package-%s","relationshipType":"STATIC_LINK","relatedSpdxElement":"SPDXRef-Package-noderecover"}' "$p"
		done
		printf ']}\n'
	} > "$out"
}

# build/dist/noderecover-VERSION-linux-ARCH for each architecture with its SBOM
# (noderecover-VERSION-linux-ARCH.spdx.json), the chart and its HelmChart, CHANGELOG.md, and
# SHA256SUMS.
dist() {
	deps
	need_cross
	mkdir -p $DIST
	for a in $ARCHES; do
		bin=$DIST/noderecover-$VERSION-linux-$a
		if [ "$a" = "$(native_arch)" ]; then
			build
			cp $B/noderecover "$bin"
		else
			bearssl "$a"
			mkdir -p $B/maps
			compile "$(musl_cc "$a")" "$BEARSSL-$a" "$bin" -Wl,-Map=$B/maps/noderecover-linux-$a.map
		fi
		sbom "$a" "$bin" "$bin.spdx.json"
		say "built $bin ($(wc -c < "$bin") bytes) and its SBOM"
	done
	chart
	cp CHANGELOG.md $DIST/CHANGELOG.md
	(cd $DIST && sha256sum noderecover-$VERSION-linux-* noderecover-$VERSION.tgz noderecover-$VERSION-helmchart.yaml CHANGELOG.md > SHA256SUMS)
}

# What the bytes of build/noderecover are (bench/bytes.py, from the link maps): the same line
# linked again without LTO, its objects named after their sources, for our bytes by file; the
# cross-built maps of `dist`, when there, for the other architectures. BYTES_UPDATE=1 also
# rewrites that part of BENCHMARKS.md.
bytes() {
	build
	mkdir -p $B/bytes
	(cd $B/bytes && rm -f ./*.o ./*.i ./*.s)
	# -save-temps compiles the preprocessed text, whose comments (/* fallthrough */) are gone;
	# the warnings are the real build's business
	compile musl-gcc $BEARSSL $B/bytes/noderecover-nolto -fno-lto -save-temps=obj -Wno-implicit-fallthrough \
		-Wl,-Map=$B/bytes/noderecover-nolto.map
	set -- --nolto-map $B/bytes/noderecover-nolto.map --arch "$(native_arch)=$B/noderecover:$B/noderecover.map"
	for a in $ARCHES; do
		[ "$a" = "$(native_arch)" ] || [ ! -f $B/maps/noderecover-linux-$a.map ] ||
			set -- "$@" --arch "$a=$DIST/noderecover-$VERSION-linux-$a:$B/maps/noderecover-linux-$a.map"
	done
	[ "${BYTES_UPDATE:-}" = 1 ] && set -- "$@" --update BENCHMARKS.md
	python3 bench/bytes.py $B/noderecover $B/noderecover.map "$@"
}

# OCI image layout pieces. The platform of an image (in its config and in the index).
oci_platform() {
	case $1 in
	amd64) echo '"architecture":"amd64","os":"linux"' ;;
	arm64) echo '"architecture":"arm64","os":"linux","variant":"v8"' ;;
	armhf) echo '"architecture":"arm","os":"linux","variant":"v7"' ;;
	esac
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
# blob FILE: moves FILE into the layout's blobs and prints its descriptor's digest and size.
blob() {
	d=$(sha "$1")
	n=$(wc -c < "$1")
	mv "$1" "$OCI/blobs/sha256/$d"
	echo "\"digest\":\"sha256:$d\",\"size\":$n"
}
# A tar that depends only on the files' names, bytes and modes: sorted, time 0, owner 0.
repro_tar() {
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' \
		--format=ustar "$@"
}

# The org.opencontainers.image.* annotations of the image index and of each manifest: title,
# description, version, source, url, licenses; created only from SOURCE_DATE_EPOCH and revision
# only from NODERECOVER_REVISION (a commit), since a build cannot know them and stay the same bytes.
oci_annotations() {
	printf '"org.opencontainers.image.title":"noderecover","org.opencontainers.image.description":"%s","org.opencontainers.image.version":"%s","org.opencontainers.image.source":"%s","org.opencontainers.image.url":"%s","org.opencontainers.image.licenses":"%s"' \
		"Taints Kubernetes nodes that stopped reporting with node.kubernetes.io/out-of-service, clears it when they return" \
		"$VERSION" "$SOURCE_URL" "$SOURCE_URL" "$(head -n 1 LICENSE | awk '{print $1}')"
	[ -z "${SOURCE_DATE_EPOCH:-}" ] || printf ',"org.opencontainers.image.created":"%s"' "$(stamp)"
	case ${NODERECOVER_REVISION:-} in
	"") ;;
	*[!0-9a-f]*) say "NODERECOVER_REVISION must be a commit's hex digits"; exit 2 ;;
	*) printf ',"org.opencontainers.image.revision":"%s"' "$NODERECOVER_REVISION" ;;
	esac
}

# build/dist/noderecover-VERSION-oci.tar from the dist binaries: an OCI image layout in one tar,
# an index over one image per architecture, each a single gzip layer holding /noderecover and
# its SBOM /noderecover.spdx.json (where scanners that read SBOM files in an image find it), run
# as 65532:65532, with the org.opencontainers.image.* annotations. Only tar, gzip -n and
# sha256sum: two builds are byte-identical.
image() {
	dist
	OCI=$B/oci/layout
	rm -rf $B/oci && mkdir -p $OCI/blobs/sha256 $B/oci/root
	manifests=
	ann=$(oci_annotations)
	for a in $ARCHES; do
		cp $DIST/noderecover-$VERSION-linux-$a $B/oci/root/noderecover
		cp $DIST/noderecover-$VERSION-linux-$a.spdx.json $B/oci/root/noderecover.spdx.json
		chmod 0755 $B/oci/root/noderecover
		chmod 0644 $B/oci/root/noderecover.spdx.json
		repro_tar -C $B/oci/root -cf $B/oci/layer.tar noderecover noderecover.spdx.json
		gzip -n -9 < $B/oci/layer.tar > $B/oci/layer.tar.gz
		diff_id=$(sha $B/oci/layer.tar)
		layer=$(blob $B/oci/layer.tar.gz)
		printf '{%s,"created":"1970-01-01T00:00:00Z","config":{"User":"65532:65532","Entrypoint":["/noderecover"],"Cmd":["run"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
			"$(oci_platform $a)" "$diff_id" > $B/oci/config.json
		config=$(blob $B/oci/config.json)
		printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json",%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip",%s}],"annotations":{%s}}' \
			"$config" "$layer" "$ann" > $B/oci/manifest.json
		manifests="$manifests${manifests:+,}{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",$(blob $B/oci/manifest.json),\"platform\":{$(oci_platform $a)}}"
	done
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s],"annotations":{%s}}' "$manifests" "$ann" > $B/oci/index.json
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json",%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$(blob $B/oci/index.json)" "$IMAGE" "$IMAGE" > $OCI/index.json
	printf '{"imageLayoutVersion":"1.0.0"}' > $OCI/oci-layout
	repro_tar -C $OCI -cf $DIST/noderecover-$VERSION-oci.tar oci-layout index.json blobs
	say "built $DIST/noderecover-$VERSION-oci.tar ($(wc -c < $DIST/noderecover-$VERSION-oci.tar) bytes, $(sha $DIST/noderecover-$VERSION-oci.tar)) named $IMAGE"
}

# build/dist/noderecover-VERSION.tgz: the Helm chart packed so that it depends only on its files'
# names, bytes and modes (helm package stamps the time: two runs differ), and
# noderecover-VERSION-helmchart.yaml: one k3s HelmChart (helm.cattle.io/v1) carrying that .tgz
# inline (spec.chartContent, base64) and the chart's values.yaml as its values, with taintAfter
# 300 (deploy/noderecover.yaml's), the image this build names, and its objects in namespace
# noderecover, which the chart creates (namespace.create, namespace.name). Needs only tar, gzip, base64.
chart() {
	v=$(sed -n 's/^version: *//p' $CHART/Chart.yaml)
	[ "$v" = "$VERSION" ] || { say "$CHART/Chart.yaml has version '$v', VERSION has $VERSION"; exit 1; }
	mkdir -p $DIST
	tgz=$DIST/noderecover-$VERSION.tgz
	repro_tar -C "$(dirname $CHART)" -cf - "$(basename $CHART)" | gzip -n -9 > "$tgz.tmp"
	mv "$tgz.tmp" "$tgz"
	# IMAGE as repository and tag (the tag after the last colon that follows the last slash)
	repo=${IMAGE%:*} tag=${IMAGE##*:}
	case $tag in */*) say "NODERECOVER_IMAGE=$IMAGE has no tag"; exit 1 ;; esac
	values=$(sed -e 's/^taintAfter: ""$/taintAfter: 300/' \
		-e "/^image:\$/,/^[a-z]/{s|^  repository: .*|  repository: $repo|;s|^  tag: \"\"\$|  tag: \"$tag\"|;}" \
		-e '/^namespace:$/,/^[a-z]/{s/^  create: false$/  create: true/;s/^  name: ""$/  name: noderecover/;}' $CHART/values.yaml)
	printf '%s\n' "$values" | grep -qx 'taintAfter: 300' && printf '%s\n' "$values" | grep -qx "  tag: \"$tag\"" &&
		printf '%s\n' "$values" | grep -qx "  name: noderecover" ||
		{ say "$CHART/values.yaml has no 'taintAfter: \"\"', image 'tag: \"\"' or namespace 'name: \"\"' line to set"; exit 1; }
	{
		printf '%s\n' "# noderecover $VERSION for k3s: its Helm chart inline (spec.chartContent: base64 of" \
			"# noderecover-$VERSION.tgz) and the chart's values (valuesContent). Set the values (taintAfter" \
			"# at least), then copy this file into /var/lib/rancher/k3s/server/manifests/. Written by" \
			"# ./build.sh dist; the release lives in kube-system, its objects in namespace noderecover," \
			"# which the chart creates (namespace.create)." \
			"apiVersion: helm.cattle.io/v1" "kind: HelmChart" "metadata:" "  name: noderecover" \
			"  namespace: kube-system" "spec:" "  targetNamespace: kube-system" \
			"  chartContent: $(base64 -w0 < "$tgz")" "  valuesContent: |-"
		printf '%s\n' "$values" | sed 's/^/    /'
	} > $DIST/noderecover-$VERSION-helmchart.yaml
	say "built $tgz ($(wc -c < "$tgz") bytes, $(sha "$tgz")) and $DIST/noderecover-$VERSION-helmchart.yaml"
}

# deploy/: the output of `noderecover manifests` for the settings deploy/README.md names
# (tests/standin/test_manifests.py fails when they differ).
deploy_manifests() {
	build
	$B/noderecover manifests --taint-after 300 > deploy/noderecover.yaml
	$B/noderecover manifests --taint-after 300 --prune-after 1800 > deploy/noderecover-prune.yaml
	$B/noderecover manifests --taint-after 300 --fence > deploy/noderecover-fence.yaml
	say "wrote deploy/noderecover.yaml, deploy/noderecover-prune.yaml and deploy/noderecover-fence.yaml for $IMAGE"
	sh deploy/prometheus/make.sh
}

# What tests/image needs: Debian's containerd and runc (the runtime k3s embeds), skopeo to read
# the archive as a registry client would, and systemd-analyze for deploy/noderecover.service.
need_image_tools() {
	missing=
	command -v containerd >/dev/null 2>&1 || missing="$missing containerd"
	command -v runc >/dev/null 2>&1 || missing="$missing runc"
	command -v skopeo >/dev/null 2>&1 || missing="$missing skopeo"
	command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# What the monitoring suite and the e2e Prometheus scenario need: Debian's prometheus (the
# server, run by the test on loopback, and promtool) and chromium (a screenshot of its graph page).
# The package's own service is not used (a container has no init to start it anyway).
need_monitoring_tools() {
	missing=
	{ command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || missing="$missing prometheus"
	command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends $missing >/dev/null
}

# The unit tests for every architecture but the native one, static with its musl wrapper and
# BearSSL (no sanitizers there), into build/unit-ARCH/ for qemu-user-static.
unit_cross() {
	for a in $ARCHES; do
		[ "$a" = "$(native_arch)" ] && continue
		mkdir -p $B/unit-$a
		for t in tests/unit/test_*.c; do
			"$(musl_cc "$a")" $CFLAGS_BASE -O1 $UNIT_FLAGS -static -o $B/unit-$a/$(basename "$t" .c) "$t" $LIB "$BEARSSL-$a/libbearssl.a"
		done
	done
}

# The image suite: the archive, rebuilt elsewhere and compared, read by skopeo, run by
# containerd; the cross binaries' unit tests and stand-in subset under qemu.
image_test() {
	image
	need_image_tools
	unit_cross
	sh tests/image/run.sh "$VERSION" "$IMAGE"
}

# The same code with AddressSanitizer and UBSan, on glibc with Debian's libbearssl.
build_asan() {
	deps
	mkdir -p $B
	gcc $CFLAGS_BASE $SAN_FLAGS -DNODERECOVER_VERSION="\"$VERSION-asan\"" -DNODERECOVER_IMAGE="\"$IMAGE\"" -o $B/noderecover-asan noderecover.c $LIB -lbearssl
}

# Unit tests in C, built with the sanitizers against glibc and Debian's libbearssl.
unit() {
	deps
	rm -rf $B/unit
	mkdir -p $B/unit/obj
	# the sources compiled once, then linked into each test (an archive: each takes what it uses)
	ucc="gcc $CFLAGS_BASE $SAN_FLAGS $UNIT_FLAGS"
	for f in $LIB; do
		$ucc -c -o $B/unit/obj/${f%.c}.o $f
	done
	ar rcs $B/unit/libnr.a $B/unit/obj/*.o
	for t in tests/unit/test_*.c; do
		n=$(basename "$t" .c)
		$ucc -o $B/unit/$n "$t" $B/unit/libnr.a -lbearssl
	done
	# json_scan.c scans strings 16 bytes at a time with SSE2; its scalar path is tested too.
	$ucc -DJSON_NO_SIMD -c -o $B/unit/json_scan_scalar.o json_scan.c
	$ucc -o $B/unit/test_json_scalar tests/unit/test_json.c $B/unit/json_scan_scalar.o $B/unit/libnr.a -lbearssl
	rc=0
	for t in $B/unit/test_*; do
		(cd tests/unit && "$top/$t") || rc=1
	done
	# the pure modules with defects put back (the fence agent's rules, the pass's decide step):
	# their unit tests must catch each
	sh tests/unit/mutants.sh $B/unit || rc=1
	return $rc
}

# The Helm suite: the chart against `noderecover manifests` (tests/helm/); a second binary, naming
# another image, for the chart's image value. Builds the helm CLI the first time (cached).
helm_test() {
	build
	chart
	other=registry.example:5000/ops/noderecover:v$VERSION-helm-test
	mkdir -p $B/helm
	gcc $CFLAGS_BASE -O0 -DNODERECOVER_VERSION="\"$VERSION\"" -DNODERECOVER_IMAGE="\"$other\"" \
		-o $B/helm/noderecover-other-image noderecover.c $LIB -lbearssl
	sh tests/helm/run.sh $B/noderecover $B/helm/noderecover-other-image "$VERSION" "$IMAGE"
}

# The deterministic simulator (tests/sim): the follower's core (core.c) with the table and the
# rules against a model cluster in virtual time. sim [SEED [COUNT]]: COUNT seeds from SEED
# (default 1 and SIM_SEEDS, split over two processes, one a core); a failing seed prints the
# line that replays it. sim_test also runs the mutants (tests/sim/mutants.sh): each defect the
# core was built to fix, put back on purpose, must be caught.
SIM_SEEDS=10000
# the election's: 1000 seeds of 30 virtual minutes, 2 or 3 replicas (about 10 s on two cores)
SIM_ELECTION_SEEDS=1000
sim() {
	mkdir -p $B/sim
	gcc -std=c11 -D_DEFAULT_SOURCE -O2 $WARN -I. -o $B/sim/sim tests/sim/sim.c core.c decide.c fencewait.c table.c policy.c
	seeds $B/sim/sim "${1:-1}" "${2:-$SIM_SEEDS}"
}
# seeds SIM FIRST COUNT: COUNT seeds of SIM from FIRST, split over two processes from 100 on.
seeds() {
	sim=$1 first=$2 count=$3 rc=0
	if [ "$count" -lt 100 ]; then
		$sim "$first" "$count"
		return
	fi
	half=$((count / 2))
	$sim "$first" "$half" &
	pid=$!
	$sim $((first + half)) $((count - half)) || rc=1
	wait $pid || rc=1
	return $rc
}
# The election's simulator (tests/sim/sim_election.c): the real lease.c, replicas as coroutines.
sim_election() {
	mkdir -p $B/sim
	gcc -std=c11 -D_DEFAULT_SOURCE -O2 $WARN -I. -o $B/sim/sim_election tests/sim/sim_election.c lease.c json.c json_list.c \
		json_scan.c json_write.c text.c
	seeds $B/sim/sim_election "${1:-1}" "${2:-$SIM_ELECTION_SEEDS}"
}
sim_test() {
	rc=0
	sim || rc=1
	sim_election || rc=1
	sh tests/sim/mutants.sh $B/sim || rc=1
	return $rc
}

# Runs one suite, keeps its output in build/NAME.log, and adds its "N passed, N failed[, N
# skipped]" lines to the totals.
PASSED=0 FAILED=0 SKIPPED=0 BROKEN=
suite() {
	name=$1; shift
	say "running $name"
	suite_t0=$(date +%s)
	# Into a file, shown as it grows, and not through a pipe: a process a test left behind
	# would hold a pipe open and hang the whole run; the suite ends when its command does.
	: >$B/$name.log
	tail -n +1 -f $B/$name.log &
	tpid=$!
	trap 'kill $tpid 2>/dev/null; exit 130' INT TERM
	"$@" >>$B/$name.log 2>&1 || :
	sleep 1
	kill $tpid 2>/dev/null || :
	wait $tpid 2>/dev/null || :
	trap 'exit 130' INT TERM
	counts=$(grep -Eo '[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?' $B/$name.log |
		awk '{p += $1; f += $3; s += $5} END {print p+0, f+0, s+0}')
	set -- $counts
	PASSED=$((PASSED + $1)) FAILED=$((FAILED + $2)) SKIPPED=$((SKIPPED + $3))
	grep -q "^$name: exit 0$" $B/$name.status || BROKEN="$BROKEN $name"
	say "$name took $(($(date +%s) - suite_t0)) s"
}
# Runs a suite's command and records its exit status, since a pipe through tee hides it.
status() {
	sname=$1; shift
	if "$@"; then rc=0; else rc=$?; fi
	echo "$sname: exit $rc" > $B/$sname.status
}

# The Go tools of the Helm and e2e suites (tests/e2e/build-tools.sh: the control plane with
# kubectl, helm, kine), built from the start of the run in the background at nice 19, where they
# take only what the suites before them leave idle. The suites ask build-tools.sh for what they
# need, as when run alone: a tool still being built is waited for (the script's lock); one whose
# background build failed is tried again there, and its suite fails with the reason if it fails
# again. Cached, this only finds them. Its output: build/tools.log.
TOOLS_PID=
tools_start() {
	what=all
	[ "${NODERECOVER_SKIP_E2E:-}" = 1 ] && what=helm
	say "building the Go tools ($what) in the background at nice 19: $B/tools.log"
	mkdir -p $B
	# a process group of its own, which tools_priority and tools_stop reach whole
	setsid nice -n 19 sh tests/e2e/build-tools.sh $what >$B/tools.log 2>&1 &
	TOOLS_PID=$!
}
# tools_priority NICE: the background build, if it still runs, at NICE: the run's own while a
# suite can only wait for it (at nice 19 a machine busy with other work would starve it), 19
# again while a suite runs beside it.
tools_priority() {
	[ -n "$TOOLS_PID" ] && kill -0 "$TOOLS_PID" 2>/dev/null || return 0
	renice -n "$1" -g "$TOOLS_PID" >/dev/null 2>&1 || :
}
# Stops the background build (its process group) if it still runs, and says what it built and
# what it could not.
tools_stop() {
	[ -n "$TOOLS_PID" ] || return 0
	kill -- -"$TOOLS_PID" 2>/dev/null || :
	wait "$TOOLS_PID" 2>/dev/null || :
	TOOLS_PID=
	grep -E '^(built|building) |NOT built' $B/tools.log | sed 's/^/build.sh: tools: /' >&2 || :
}

test_all() {
	tools_start
	# an interrupted run stops the background build too (a signal's default would skip EXIT)
	trap tools_stop EXIT
	trap 'exit 130' INT TERM HUP
	run_nice=$(nice)
	build
	build_asan
	suite unit status unit unit
	suite sim status sim sim_test
	suite fuzz-replay status fuzz-replay sh tests/fuzz/replay.sh
	need_monitoring_tools
	suite monitoring status monitoring sh tests/monitoring/run.sh
	suite standin status standin sh tests/standin/run.sh $B/noderecover
	suite standin-asan status standin-asan sh tests/standin/run.sh $B/noderecover-asan
	# The Python model of the contract runs the same contract tests: a test that fails against
	# it is suspect, and a test that passes against a model and a binary that disagree is no
	# test. The wire's hardening (slow peers, framing, secrets, shutdown) and the manifests are
	# the binary's own and not modelled.
	suite standin-model status standin-model sh tests/standin/run.sh tests/standin/refwatcher.py \
		test_00_standin test_auth test_edges test_faults test_hostile test_paging test_prune \
		test_run test_settings test_slow_body test_slow_headers test_taint \
		test_storm test_exclude test_dryrun test_conflict test_access test_clock
	suite image status image image_test
	# the fence agent's real watchdog in a qemu VM (tests/vm: installs qemu and fetches Debian's
	# kernel the first time, then about 80 s)
	suite vm status vm sh tests/vm/run.sh $B/noderecover
	tools_priority "$run_nice"
	suite helm status helm helm_test
	tools_priority 19
	if [ "${NODERECOVER_SKIP_E2E:-}" = 1 ]; then
		say "skipping the end-to-end tests (NODERECOVER_SKIP_E2E=1)"
	else
		suite e2e status e2e sh tests/e2e/run.sh $B/noderecover
		# a subset again on kine over SQLite, k3s's default datastore (tests/e2e/run.sh)
		tools_priority "$run_nice"
		suite e2e-kine status e2e-kine env NODERECOVER_E2E_DATASTORE=kine sh tests/e2e/run.sh $B/noderecover
		# the chaos soak's short form (tests/e2e/soak_test.go): a few minutes of faults
		suite soak status soak soak "$SOAK_SHORT" "${NODERECOVER_SOAK_NODES:-$SOAK_SHORT_NODES}"
	fi
	tools_stop
	[ -z "$BROKEN" ] || say "suites that failed:$BROKEN"
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ -z "$BROKEN" ] && [ "$FAILED" -eq 0 ]
}

# The chaos soak on the real control plane (tests/e2e/soak_test.go): MINUTES of faults (default
# 60), then a summary; NODERECOVER_SOAK_SEED replays a run's schedule, NODERECOVER_SOAK_NODES
# sets the fleet (default 1000). The short form in test: SOAK_SHORT minutes, SOAK_SHORT_NODES nodes.
SOAK_SHORT=4 SOAK_SHORT_NODES=300
soak() {
	min=$1 nodes=$2
	NODERECOVER_SOAK_MINUTES=$min NODERECOVER_SOAK_NODES=$nodes NODERECOVER_E2E_RUN='^TestSoak' \
		NODERECOVER_E2E_TIMEOUT="$(awk -v m="$min" 'BEGIN {printf "%dm", m + 30}')" sh tests/e2e/run.sh $B/noderecover
}

cmd=${1:-build}
case $cmd in
build) build ;;
dist) dist ;;
chart) chart ;;
helm) helm_test ;;
image) image ;;
image-test) image_test ;;
deploy) deploy_manifests ;;
asan) build_asan ;;
unit) unit ;;
test) test_all ;;
standin) build; sh tests/standin/run.sh $B/noderecover ;;
e2e) build; need_monitoring_tools; sh tests/e2e/run.sh $B/noderecover ;;
monitoring) need_monitoring_tools; sh tests/monitoring/run.sh ;;
vm) build; sh tests/vm/run.sh $B/noderecover ;;
soak) build; soak "${2:-60}" "${NODERECOVER_SOAK_NODES:-1000}" ;;
sim) sim "${2:-1}" "${3:-$SIM_SEEDS}" ;;
sim-election) sim_election "${2:-1}" "${3:-$SIM_ELECTION_SEEDS}" ;;
demo) build; python3 demo/demo.py $B/noderecover ;;
bench) build; sh bench/run.sh $B/noderecover ;;
bytes) bytes ;;
clean) rm -rf $B ;;
*) say "unknown command $cmd"; exit 2 ;;
esac
