// Command echo is the project's test image for real nodes (hack/build-node-images.sh): an HTTP
// server that answers every request with the pod's name and the request's path, and logs each
// one, so a test sees logs, Services and DNS work. With -say it prints its argument and exits,
// with -get it prints what a URL answers (an https one with the pod's ServiceAccount token,
// trusting the cluster's CA), and with -send it sends one UDP datagram, and exits: what a test
// runs with kubectl exec (the image has no shell).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "where to serve")
	say := flag.String("say", "", "print this and exit")
	get := flag.String("get", "", "print what this URL answers and exit")
	send := flag.String("send", "", "send one UDP datagram to this host:port and exit")
	flag.Parse()
	if *say != "" {
		fmt.Println(*say)
		return
	}
	if *send != "" {
		c, err := net.Dial("udp", *send)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := c.Write([]byte("probe from " + host())); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *get != "" {
		req, err := http.NewRequest(http.MethodGet, *get, nil)
		if err != nil {
			log.Fatal(err)
		}
		client := http.Client{Timeout: 5 * time.Second}
		if req.URL.Scheme == "https" {
			client.Transport, err = withServiceAccount(req)
			if err != nil {
				log.Fatal(err)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(os.Stdout, resp.Body)
		return
	}
	host := host()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("echo: %s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "%s %s\n", host, r.URL.Path)
	})
	log.Printf("echo: %s serving on %s", host, *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// withServiceAccount has req carry the pod's ServiceAccount token and returns a transport that
// trusts the cluster's CA, as a client in a pod reaches the cluster's API.
func withServiceAccount(req *http.Request) (http.RoundTripper, error) {
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	token, err := os.ReadFile(dir + "token")
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(dir + "ca.crt")
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no CA in %sca.crt", dir)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}, nil
}

func host() string {
	h, _ := os.Hostname()
	return h
}
