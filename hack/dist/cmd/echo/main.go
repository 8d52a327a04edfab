// Command echo is the project's test image for real nodes (hack/build-node-images.sh): an HTTP
// server that answers every request with the pod's name and the request's path, and logs each
// one, so a test sees logs, Services and DNS work. With -say it prints its argument and exits,
// with -get it prints what a URL answers, and with -send it sends one UDP datagram, and exits:
// what a test runs with kubectl exec (the image has no shell).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
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
		client := http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get(*get)
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

func host() string {
	h, _ := os.Hostname()
	return h
}
