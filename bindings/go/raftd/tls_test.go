// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64 = 1

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for 127.0.0.1 usable as server and client;
// it returns the PEM of the certificate and of its key.
func (ca *testCA) issue(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientTLS is a client configuration trusting roots, presenting cert (if
// any).
func clientTLS(t *testing.T, roots *testCA, certPEM, keyPEM []byte) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(roots.pem)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		// Present it whatever CAs the server asks for (Go's client would
		// otherwise keep quiet about a certificate of another CA).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	return cfg
}

// TestMutualTLS runs two tkv-raftd processes with -tls-ca/-tls-cert/-tls-key
// (the second joins over HTTPS and replicates over the TLS transport) and
// shows that only holders of a certificate from the cluster's CA get in:
// HTTP clients without a certificate, with one from another CA, or without
// TLS are refused, and so is a would-be raft peer without a certificate,
// with another CA's, or over plain TCP, while one with a CA-signed
// certificate is answered.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "tkv-raftd test CA")
	rogue := newTestCA(t, "someone else's CA")
	nodeCert, nodeKey := ca.issue(t, "node")
	cliCert, cliKey := ca.issue(t, "client")
	rogueCert, rogueKey := rogue.issue(t, "intruder")
	caFile := writeFile(t, filepath.Join(dir, "ca.pem"), ca.pem)
	certFile := writeFile(t, filepath.Join(dir, "node.pem"), nodeCert)
	keyFile := writeFile(t, filepath.Join(dir, "node-key.pem"), nodeKey)

	good := clientTLS(t, ca, cliCert, cliKey)
	c := startCluster(t, 2, good, "-tls-ca", caFile, "-tls-cert", certFile, "-tls-key", keyFile,
		"-heartbeat-timeout", "500ms", "-election-timeout", "500ms", "-leader-lease", "250ms")
	l := c.waitLeader(10 * time.Second)
	st, err := c.api.status(l.http)
	if err != nil {
		t.Fatal(err)
	}
	if !st.TLS || len(st.Servers) != 2 {
		t.Fatalf("status: tls=%v servers=%v", st.TLS, st.Servers)
	}
	term := st.Term

	// A client with a certificate from the CA.
	if r := c.api.do(http.MethodPut, "https://"+l.http+"/key/k", []byte("v")); r.netErr != nil || r.code != http.StatusNoContent {
		t.Fatalf("put with a CA-signed client certificate: %d %s %v", r.code, r.body, r.netErr)
	}
	if r := c.api.do(http.MethodGet, "https://"+l.http+"/key/k", nil); r.netErr != nil || string(r.body) != "v" {
		t.Fatalf("get with a CA-signed client certificate: %d %s %v", r.code, r.body, r.netErr)
	}

	// Clients that must be refused.
	for _, tc := range []struct {
		name string
		api  *api
		url  string
	}{
		{"no client certificate", newAPI(clientTLS(t, ca, nil, nil), 3*time.Second), "https://"},
		{"a certificate from another CA", newAPI(clientTLS(t, ca, rogueCert, rogueKey), 3*time.Second), "https://"},
		{"plain HTTP", newAPI(nil, 3*time.Second), "http://"},
	} {
		for _, p := range c.nodes {
			r := tc.api.do(http.MethodPut, tc.url+p.http+"/key/intruder", []byte("x"))
			if r.netErr == nil && r.code < 400 {
				t.Errorf("%s: %s answered %d %s", tc.name, p.id, r.code, r.body)
			}
			t.Logf("%s at %s: refused (%v%s)", tc.name, p.id, r.netErr, statusText(r))
		}
	}
	if r := c.api.do(http.MethodGet, "https://"+l.http+"/key/intruder", nil); r.code != http.StatusNotFound {
		t.Errorf("a refused client's write is there: %d %s", r.code, r.body)
	}

	// Would-be raft peers, dialling the leader's transport.
	peer := func(cfg *tls.Config) error {
		sl, err := newStreamLayer("127.0.0.1:0", "", cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: sl, MaxPool: 1, Timeout: 3 * time.Second, Logger: hclog.NewNullLogger(),
		})
		defer tr.Close()
		// A vote request for a far later term: were it let in, the
		// cluster would move to that term.
		req := &raft.RequestVoteRequest{
			RPCHeader:    raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(tr.LocalAddr())},
			Term:         term + 1000,
			LastLogIndex: 1 << 40, LastLogTerm: term + 999,
		}
		var resp raft.RequestVoteResponse
		return tr.RequestVote("n1", raft.ServerAddress(l.raft), req, &resp)
	}
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"no certificate", clientTLS(t, ca, nil, nil)},
		{"a certificate from another CA", clientTLS(t, ca, rogueCert, rogueKey)},
		{"plain TCP", nil},
	} {
		err := peer(tc.cfg)
		if err == nil {
			t.Errorf("a raft peer with %s was answered", tc.name)
		} else {
			t.Logf("raft peer with %s: refused (%v)", tc.name, err)
		}
	}
	if st, err := c.api.status(l.http); err != nil || st.Term != term || st.State != "Leader" {
		t.Errorf("after the refused peers: term %d (was %d), state %s, %v", st.Term, term, st.State, err)
	}

	// A peer with a CA-signed certificate is answered (with a refusal of
	// its vote, as it is not a member, but at the raft level). Its term
	// is the current one, so the cluster is not disturbed.
	sl, err := newStreamLayer("127.0.0.1:0", "", clientTLS(t, ca, nodeCert, nodeKey))
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: sl, MaxPool: 1, Timeout: 3 * time.Second, Logger: hclog.NewNullLogger()})
	defer tr.Close()
	var resp raft.RequestVoteResponse
	req := &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n9"), Addr: []byte(tr.LocalAddr())},
		Term:      0,
	}
	if err := tr.RequestVote("n1", raft.ServerAddress(l.raft), req, &resp); err != nil {
		t.Errorf("a raft peer with a CA-signed certificate: %v", err)
	} else if resp.Granted {
		t.Errorf("a vote for a stale term was granted")
	}
}

func statusText(r reply) string {
	if r.netErr != nil {
		return ""
	}
	return http.StatusText(r.code)
}
