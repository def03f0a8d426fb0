// standin: a Kubernetes API stand-in for noderecover's benchmark. It serves GET /api/v1/nodes
// (limit/continue, chunked, gzip for large bodies when asked, like kube-apiserver) and
// PATCH /api/v1/nodes/NAME from Node objects serialized once at start-up, so that the
// clients are what a benchmark measures, not this server. Standard library only.
//
//	standin -certs DIR -token-file F -ns 100,1000,5000,20000 -port 16443 -control 16440
//
// One TLS listener per cluster size: port+0 serves the first size, port+1 the second, ...
// It also serves watches (watch.go). The control port (plain HTTP, 127.0.0.1) answers:
//
//	GET /stats         one line per size: bytes written/read on its TCP connections and counts
//	GET /watch?...     arms the next watch (watch.go); GET /go?n=N releases a held one
//	GET /urls?n=N&limit=L  the page URLs a paged list of that cluster walks (for curl)
//	GET /quit          stops the server
//
// standin -dump N writes node N (as JSON) to stdout and exits.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const gzipThreshold = 128 * 1024 // kube-apiserver's defaultGzipThresholdBytes
const gzipLevel = 1              // kube-apiserver's defaultGzipContentEncodingLevel
const writePiece = 32 * 1024     // each Write becomes one HTTP chunk

type stats struct {
	written, read, conns, lists, listBytes, gzipped, patches, patchBad, other atomic.Int64
	mu                                                                        sync.Mutex
	tlsSeen                                                                   map[string]int
}

type page struct {
	body []byte
	gz   []byte // lazily made
	once sync.Once
}

type cluster struct {
	n        int
	rv       int
	nodes    [][]byte       // each node's JSON
	rvs      []string       // each node's resourceVersion
	index    map[string]int // name -> position
	mu       sync.Mutex
	pages    map[int][]*page // limit (0: all) -> pages
	st       stats
	token    string
	patchOut map[string][]byte
	made     time.Time  // the "now" the nodes were made at
	ws       watchState // the watch side (watch.go)
}

func newCluster(n int, now time.Time) *cluster {
	c := &cluster{n: n, index: make(map[string]int, n), pages: map[int][]*page{}, made: now}
	c.rv = 5000000 + n
	c.nodes = make([][]byte, n)
	c.rvs = make([]string, n)
	for i := 0; i < n; i++ {
		rv := 4000000 + i*17
		nd := makeNode(i, now, rv)
		b, err := json.Marshal(nd)
		if err != nil {
			log.Fatal(err)
		}
		c.nodes[i] = b
		c.rvs[i] = nd.Metadata.ResourceVersion
		c.index[nd.Metadata.Name] = i
	}
	c.st.tlsSeen = map[string]int{}
	return c
}

func (c *cluster) name(i int) string { return fmt.Sprintf("k3s-agent-%05d", i) }

// continueToken is shaped like kube-apiserver's: base64url(JSON{v, rv, start}).
func (c *cluster) continueToken(start int) string {
	j := fmt.Sprintf(`{"v":"meta.k8s.io/v1","rv":%d,"start":"%s\u0000"}`, c.rv, c.name(start))
	return base64.RawURLEncoding.EncodeToString([]byte(j))
}

func (c *cluster) parseContinue(tok string) (int, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	var v struct {
		V     string `json:"v"`
		RV    int    `json:"rv"`
		Start string `json:"start"`
	}
	if json.Unmarshal(raw, &v) != nil || v.V != "meta.k8s.io/v1" || v.RV != c.rv {
		return 0, false
	}
	i, ok := c.index[strings.TrimSuffix(v.Start, "\x00")]
	return i, ok
}

// buildPage serializes items [from, from+limit) the way kube-apiserver writes a NodeList.
func (c *cluster) buildPage(from, limit int) []byte {
	to := c.n
	if limit > 0 && from+limit < c.n {
		to = from + limit
	}
	var b bytes.Buffer
	b.WriteString(`{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"`)
	b.WriteString(strconv.Itoa(c.rv))
	b.WriteString(`"`)
	if to < c.n {
		fmt.Fprintf(&b, `,"continue":"%s","remainingItemCount":%d`, c.continueToken(to), c.n-to)
	}
	b.WriteString(`},"items":[`)
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		b.Write(c.nodes[i])
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// pagesFor returns the pre-serialized pages of a walk with this limit (0: one page of all).
func (c *cluster) pagesFor(limit int) []*page {
	if limit >= c.n {
		limit = 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pages[limit]; ok {
		return p
	}
	var ps []*page
	if limit == 0 {
		ps = []*page{{body: c.buildPage(0, 0)}}
	} else {
		for from := 0; from < c.n; from += limit {
			ps = append(ps, &page{body: c.buildPage(from, limit)})
		}
	}
	c.pages[limit] = ps
	return ps
}

func (p *page) gzipped() []byte {
	p.once.Do(func() {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzipLevel)
		w.Write(p.body)
		w.Close()
		p.gz = b.Bytes()
	})
	return p.gz
}

// tlsVersion names a TLS version (tls.VersionName needs Go 1.21; Debian 12 has Go 1.19).
func tlsVersion(v uint16) string {
	switch v {
	case tls.VersionTLS12:
		return "TLS 1.2"
	case tls.VersionTLS13:
		return "TLS 1.3"
	}
	return fmt.Sprintf("TLS 0x%04x", v)
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`+"\n", msg, reason, code)
}

func writeBody(w http.ResponseWriter, b []byte) {
	for len(b) > 0 {
		k := writePiece
		if k > len(b) {
			k = len(b)
		}
		if _, err := w.Write(b[:k]); err != nil {
			return
		}
		b = b[k:]
	}
}

func (c *cluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS != nil {
		key := tlsVersion(r.TLS.Version) + " " + tls.CipherSuiteName(r.TLS.CipherSuite) + " " + r.Proto + " | " + r.UserAgent()
		c.st.mu.Lock()
		c.st.tlsSeen[key]++
		c.st.mu.Unlock()
	}
	w.Header().Set("Audit-Id", uuidOf("audit", strconv.FormatInt(time.Now().UnixNano(), 10)))
	w.Header().Set("Cache-Control", "no-cache, private")
	w.Header().Set("X-Kubernetes-Pf-Flowschema-Uid", "1c7a8f5e-0b0e-4a63-9d2b-cf8f3f2ad1a0")
	w.Header().Set("X-Kubernetes-Pf-Prioritylevel-Uid", "b0e6a3b7-55d5-4d3f-8c0e-5a3c2e5f7d11")
	if r.Header.Get("Authorization") != "Bearer "+c.token {
		c.st.other.Add(1)
		status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	switch {
	case r.URL.Path == "/api/v1/nodes" && r.Method == http.MethodGet && (r.URL.Query().Get("watch") == "1" || r.URL.Query().Get("watch") == "true"):
		c.watch(w, r)
	case r.URL.Path == "/api/v1/nodes" && r.Method == http.MethodGet:
		c.list(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") && r.Method == http.MethodPatch:
		c.patch(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") && r.Method == http.MethodGet:
		i, ok := c.index[strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/")]
		if !ok {
			c.st.other.Add(1)
			status(w, 404, "NotFound", "nodes not found")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(c.nodes[i])
	case r.URL.Path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" && r.Method == http.MethodPost:
		// the permission check at start: everything is allowed here (not counted: not an error)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":true}}`)
	case strings.HasPrefix(r.URL.Path, "/apis/events.k8s.io/v1/namespaces/") && r.Method == http.MethodPost:
		// an Event after each action: accepted, not kept (not counted: not an error)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{}`)
	default:
		c.st.other.Add(1)
		status(w, 404, "NotFound", "the server could not find the requested resource")
	}
}

func (c *cluster) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if fs := q.Get("fieldSelector"); fs != "" {
		c.listOne(w, fs)
		return
	}
	limit := 0
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			c.st.other.Add(1)
			status(w, 400, "BadRequest", "invalid limit")
			return
		}
		limit = v
	}
	from := 0
	if tok := q.Get("continue"); tok != "" {
		i, ok := c.parseContinue(tok)
		if !ok {
			c.st.other.Add(1)
			status(w, 410, "Expired", "The provided continue parameter is too old to display a consistent list result.")
			return
		}
		from = i
	}
	var p *page
	if limit >= c.n || limit == 0 {
		if from == 0 {
			p = c.pagesFor(0)[0]
		} else {
			p = &page{body: c.buildPage(from, 0)}
		}
	} else if from%limit == 0 {
		p = c.pagesFor(limit)[from/limit]
	} else { // a walk that changed its limit midway: serialize this page now
		p = &page{body: c.buildPage(from, limit)}
	}
	c.st.lists.Add(1)
	c.st.listBytes.Add(int64(len(p.body)))
	w.Header().Set("Content-Type", "application/json")
	body := p.body
	if len(body) > gzipThreshold && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		body = p.gzipped()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
		c.st.gzipped.Add(1)
	}
	w.WriteHeader(200)
	writeBody(w, body)
}

// patch accepts a JSON patch whose first operation tests the node's resourceVersion, like
// noderecover sends, and answers with the node (the real server answers with the patched node;
// this one is not changed, so every run of the benchmark finds the same cluster).
func (c *cluster) patch(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/")
	i, ok := c.index[name]
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if !ok {
		c.st.patchBad.Add(1)
		status(w, 404, "NotFound", fmt.Sprintf("nodes %q not found", name))
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json-patch+json") {
		c.st.patchBad.Add(1)
		status(w, 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json")
		return
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &ops); err != nil || len(ops) < 2 {
		c.st.patchBad.Add(1)
		status(w, 400, "BadRequest", "invalid JSON patch")
		return
	}
	var rv string
	c.mu.Lock()
	want := c.rvs[i]
	c.mu.Unlock()
	if ops[0].Op != "test" || ops[0].Path != "/metadata/resourceVersion" || json.Unmarshal(ops[0].Value, &rv) != nil || rv != want {
		c.st.patchBad.Add(1)
		status(w, 422, "Invalid", "the server rejected our request due to an error in our request")
		return
	}
	c.st.patches.Add(1)
	c.notePatched(i)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	w.Write(c.nodes[i])
}

// countingListener counts the bytes that cross its connections, TLS records included.
type countingListener struct {
	net.Listener
	st *stats
}

type countingConn struct {
	net.Conn
	st *stats
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.st.conns.Add(1)
	return countingConn{c, l.st}, nil
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.st.read.Add(int64(n))
	return n, err
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.st.written.Add(int64(n))
	return n, err
}

func main() {
	certs := flag.String("certs", "", "directory with server.crt and server.key")
	tokenFile := flag.String("token-file", "", "bearer token clients must send")
	ns := flag.String("ns", "100,1000,5000,20000", "cluster sizes, one listener each")
	port := flag.Int("port", 16443, "first TLS port")
	control := flag.Int("control", 16440, "plain HTTP control port")
	prewarm := flag.String("prewarm", "500,0", "page limits to serialize at start-up")
	dump := flag.Int("dump", -1, "write node N as JSON and exit")
	flag.Parse()
	now := time.Now()
	if *dump >= 0 {
		b, _ := json.MarshalIndent(makeNode(*dump, now, 4000000), "", "  ")
		os.Stdout.Write(append(b, '\n'))
		return
	}
	tokb, err := os.ReadFile(*tokenFile)
	if err != nil {
		log.Fatal(err)
	}
	token := strings.TrimSpace(string(tokb))
	cert, err := tls.LoadX509KeyPair(*certs+"/server.crt", *certs+"/server.key")
	if err != nil {
		log.Fatal(err)
	}
	var clusters []*cluster
	for k, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			log.Fatalf("bad size %q", s)
		}
		t0 := time.Now()
		c := newCluster(n, now)
		c.token = token
		for _, ls := range strings.Split(*prewarm, ",") {
			if l, err := strconv.Atoi(ls); err == nil {
				for _, p := range c.pagesFor(l) {
					if len(p.body) > gzipThreshold {
						p.gzipped()
					}
				}
			}
		}
		clusters = append(clusters, c)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port+k))
		if err != nil {
			log.Fatal(err)
		}
		srv := &http.Server{
			Handler:   c,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
			ErrorLog:  log.New(io.Discard, "", 0),
		}
		go srv.ServeTLS(countingListener{ln, &c.st}, "", "")
		avg := 0
		for _, b := range c.nodes {
			avg += len(b)
		}
		log.Printf("standin: %d nodes (%d bytes each on average) on https://127.0.0.1:%d, ready in %v",
			n, avg/n, *port+k, time.Since(t0).Round(time.Millisecond))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpu := ru.Utime.Sec*1000000 + int64(ru.Utime.Usec) + ru.Stime.Sec*1000000 + int64(ru.Stime.Usec)
		for _, c := range clusters {
			c.st.mu.Lock()
			var seen []string
			for k, v := range c.st.tlsSeen {
				seen = append(seen, fmt.Sprintf("%s x%d", k, v))
			}
			c.st.mu.Unlock()
			sort.Strings(seen)
			fmt.Fprintf(w, "n=%d server_cpu_us=%d written=%d read=%d conns=%d lists=%d list_bytes=%d gzipped=%d patches=%d patch_bad=%d other=%d %s tls=%s\n",
				c.n, cpu, c.st.written.Load(), c.st.read.Load(), c.st.conns.Load(), c.st.lists.Load(), c.st.listBytes.Load(),
				c.st.gzipped.Load(), c.st.patches.Load(), c.st.patchBad.Load(), c.st.other.Load(), c.watchStats(),
				strconv.Quote(strings.Join(seen, "; ")))
		}
	})
	mux.HandleFunc("/urls", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		for k, c := range clusters {
			if c.n != n {
				continue
			}
			base := fmt.Sprintf("https://127.0.0.1:%d/api/v1/nodes", *port+k)
			if limit <= 0 {
				fmt.Fprintln(w, base)
				return
			}
			for from := 0; from < c.n; from += limit {
				if from == 0 {
					fmt.Fprintf(w, "%s?limit=%d\n", base, limit)
				} else {
					fmt.Fprintf(w, "%s?limit=%d&continue=%s\n", base, limit, c.continueToken(from))
				}
			}
			return
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("/watch", func(w http.ResponseWriter, r *http.Request) { controlWatch(clusters, w, r) })
	mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) { controlWatch(clusters, w, r) })
	done := make(chan struct{})
	mux.HandleFunc("/quit", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "bye")
		close(done)
	})
	cl, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *control))
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(cl, mux)
	log.Printf("standin: control on http://127.0.0.1:%d", *control)
	select {
	case <-done:
	case <-time.After(4 * time.Hour):
	}
	time.Sleep(50 * time.Millisecond)
}
