// Command podtool is what the node agent's tests run in pods:
//
//	podtool serve --listen=<host:port> [--tls] [-- args...]
//	    answers every HTTP request with $POD_NAME (HTTPS with a
//	    self-signed certificate under --tls), after logging the arguments
//	    after "--" so that tests can read what a container was given
//	podtool whoami
//	    prints who rest.InClusterConfig() authenticates as
//
// whoami loads the in-cluster configuration exactly as a program in a
// real pod does, asks the API server for a SelfSubjectReview, prints the
// user's name, $KUBECONFIG (empty in a real pod), then each extra field
// as name=value, one per line, and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: podtool serve|whoami [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "whoami":
		err = whoami(ctx)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "podtool: %v\n", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := flags.String("listen", ":8080", "address to serve on")
	useTLS := flags.Bool("tls", false, "serve HTTPS with a self-signed certificate")
	if err := flags.Parse(args); err != nil {
		return err
	}
	fmt.Printf("args: %s\n", quoteAll(flags.Args()))
	name := os.Getenv("POD_NAME")
	server := &http.Server{
		Addr:              *listen,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = fmt.Fprint(w, name)
		}),
	}
	go func() {
		<-ctx.Done()
		fmt.Println("received a termination signal")
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	fmt.Printf("serving %s on %s\n", name, *listen)
	var err error
	if *useTLS {
		if server.TLSConfig, err = selfSigned(*listen); err != nil {
			return err
		}
		err = server.ListenAndServeTLS("", "")
	} else {
		err = server.ListenAndServe()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func quoteAll(args []string) string {
	quoted := make([]string, len(args))
	for i, arg := range args {
		quoted[i] = strconv.Quote(arg)
	}
	return strings.Join(quoted, " ")
}

func whoami(ctx context.Context) error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("failed to load the in-cluster configuration: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("failed to review the in-cluster credentials against %s: %w", cfg.Host, err)
	}
	user := review.Status.UserInfo
	lines := []string{"user=" + user.Username, "kubeconfig=" + os.Getenv("KUBECONFIG")}
	for key, values := range user.Extra {
		lines = append(lines, key+"="+strings.Join(values, ","))
	}
	sort.Strings(lines[2:])
	fmt.Println(strings.Join(lines, "\n"))
	return nil
}
