// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// LoadTLS builds the mutual-TLS configuration of a node from PEM files: the
// cluster's CA certificate, and the node's certificate and key, signed by
// that CA. The result serves (it requires and verifies a client certificate
// from the CA) and dials (it presents the node's certificate and verifies
// the server's against the CA). A node's certificate must name its address
// (an IP SAN for 127.0.0.1, say) and allow both server and client auth.
func LoadTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, errors.New("tls: the CA, certificate and key are all needed")
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("tls: no certificate in %s", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// streamLayer is raft's network layer: TCP, or TLS over TCP when cfg is set.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	cfg       *tls.Config
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// handshakeTimeout bounds a TLS handshake on either side of a raft
// connection, so that a peer that connects and says nothing holds no
// goroutine for long.
const handshakeTimeout = 10 * time.Second

func newStreamLayer(bind, advertise string, cfg *tls.Config) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	var adv net.Addr = ln.Addr()
	if advertise != "" {
		if adv, err = net.ResolveTCPAddr("tcp", advertise); err != nil {
			ln.Close()
			return nil, fmt.Errorf("raft advertise address: %w", err)
		}
	}
	if ta, ok := adv.(*net.TCPAddr); !ok || ta.IP == nil || ta.IP.IsUnspecified() || ta.Port == 0 {
		ln.Close()
		return nil, fmt.Errorf("raft address %v cannot be dialled by peers: give -raft-advertise", adv)
	}
	return &streamLayer{Listener: ln, advertise: adv, cfg: cfg}, nil
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil || s.cfg == nil {
		return c, err
	}
	return &serverTLSConn{Conn: tls.Server(c, s.cfg)}, nil
}

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if s.cfg == nil {
		return d.Dial("tcp", string(address))
	}
	host, _, err := net.SplitHostPort(string(address))
	if err != nil {
		return nil, err
	}
	cfg := s.cfg.Clone()
	cfg.ServerName = host
	if timeout <= 0 || timeout > handshakeTimeout {
		d.Timeout = handshakeTimeout
	}
	return tls.DialWithDialer(d, "tcp", string(address), cfg)
}

// serverTLSConn does the server side handshake, with a deadline, on the
// first read or write: raft reads each accepted connection on a goroutine
// of its own, so a slow or refused handshake holds up no other peer. A
// peer without a certificate from the CA fails here and the connection is
// closed by raft.
type serverTLSConn struct {
	*tls.Conn
	once sync.Once
	err  error
}

func (c *serverTLSConn) handshake() error {
	c.once.Do(func() {
		c.Conn.SetDeadline(time.Now().Add(handshakeTimeout))
		c.err = c.Conn.Handshake()
		c.Conn.SetDeadline(time.Time{})
	})
	return c.err
}

func (c *serverTLSConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *serverTLSConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
