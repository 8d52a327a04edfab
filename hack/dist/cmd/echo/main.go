// Command echo is the project's test image for real nodes (hack/build-node-images.sh): an HTTP
// server that answers every request with the pod's name and the request's path, and logs each
// one, so a test sees logs, Services and DNS work. With -say it prints its argument and exits,
// and with -get it prints what a URL answers and exits: what a test runs with kubectl exec (the
// image has no shell).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "where to serve")
	say := flag.String("say", "", "print this and exit")
	get := flag.String("get", "", "print what this URL answers and exit")
	flag.Parse()
	if *say != "" {
		fmt.Println(*say)
		return
	}
	if *get != "" {
		client := http.Client{Timeout: 10 * time.Second}
		resp, err := client.Get(*get)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(os.Stdout, resp.Body)
		return
	}
	host, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("echo: %s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "%s %s\n", host, r.URL.Path)
	})
	log.Printf("echo: %s serving on %s", host, *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
