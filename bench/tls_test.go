package main

import (
	"crypto/tls"
	"os"
	"strings"
	"testing"
)

// TestBenchTLSHandshake: the key store the brokers read holds a key and a
// certificate that the clients' config trusts for 127.0.0.1, and the Java
// tools' properties name the same trust store.
func TestBenchTLSHandshake(t *testing.T) {
	certs, err := newBenchTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := os.ReadFile(certs.keystore)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(pemBytes, pemBytes)
	if err != nil {
		t.Fatalf("key store: %v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	addr := certs.addr(ln.Addr().String())
	c, err := tls.Dial("tcp", addr.bootstrap, addr.tls)
	if err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	c.Close()
	props := strings.Join(addr.clientProps, "\n")
	if !strings.Contains(props, "security.protocol=SSL") || !strings.Contains(props, "ssl.truststore.location="+certs.truststore) {
		t.Fatalf("client properties: %s", props)
	}
}
