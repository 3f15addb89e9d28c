// Argo CD's reading of a cluster Secret, for cpsync's interoperability tests: the Secret (a
// Kubernetes Secret labelled argocd.argoproj.io/secret-type: cluster, as JSON with base64 `data`) is
// read from stdin and converted by Argo CD's own code (github.com/argoproj/argo-cd/v3/util/db
// SecretToCluster), then the Cluster is turned into a client-go rest.Config the way Argo CD does
// (RawRestConfig, and RESTConfig, which also builds the transport and so the exec authenticator).
// It prints one JSON object:
//
//	{"cluster": <v1alpha1.Cluster>, "rest": {"host", "caDataLength", "insecure", "exec": {...} | null}}
//
// With -reach it then uses that rest.Config as Argo CD's components do and asks the cluster who the
// caller is (a SelfSubjectReview, which runs the exec plugin and the cluster's authenticator), adding
// "reach": {"username", "groups"}. `render` is the ClusterProfile integration's step before (integration.go);
// `clusters` is the ApplicationSet controller's cluster generator over the Secrets in Argo CD's namespace
// (generator.go).
// On any error it prints the error to stderr and exits 1.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/argoproj/argo-cd/v3/util/db"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

type execEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type execOut struct {
	Command            string    `json:"command"`
	Args               []string  `json:"args"`
	APIVersion         string    `json:"apiVersion"`
	Env                []execEnv `json:"env"`
	InstallHint        string    `json:"installHint,omitempty"`
	ProvideClusterInfo bool      `json:"provideClusterInfo"`
	InteractiveMode    string    `json:"interactiveMode"`
}

type restOut struct {
	Host         string   `json:"host"`
	CADataLength int      `json:"caDataLength"`
	Insecure     bool     `json:"insecure"`
	ServerName   string   `json:"serverName,omitempty"`
	Exec         *execOut `json:"exec"`
}

type reachOut struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

func run(reach bool) error {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	var secret corev1.Secret
	if err := json.Unmarshal(input, &secret); err != nil {
		return fmt.Errorf("parsing the Secret: %w", err)
	}
	cluster, err := db.SecretToCluster(&secret)
	if err != nil {
		return fmt.Errorf("SecretToCluster: %w", err)
	}
	// RawRestConfig is the config before Argo CD moves TLS and exec into its own transport;
	// RESTConfig does that move (rest.TLSConfigFor, rest.HTTPWrappersForConfig) and fails on a CA,
	// client certificate or exec provider client-go does not accept.
	raw, err := cluster.RawRestConfig()
	if err != nil {
		return fmt.Errorf("RawRestConfig: %w", err)
	}
	restConfig, err := cluster.RESTConfig()
	if err != nil {
		return fmt.Errorf("RESTConfig: %w", err)
	}
	rest := restOut{
		Host:         raw.Host,
		CADataLength: len(raw.TLSClientConfig.CAData),
		Insecure:     raw.TLSClientConfig.Insecure,
		ServerName:   raw.TLSClientConfig.ServerName,
	}
	if e := raw.ExecProvider; e != nil {
		out := &execOut{
			Command:            e.Command,
			Args:               e.Args,
			APIVersion:         e.APIVersion,
			Env:                []execEnv{},
			InstallHint:        e.InstallHint,
			ProvideClusterInfo: e.ProvideClusterInfo,
			InteractiveMode:    string(e.InteractiveMode),
		}
		if out.Args == nil {
			out.Args = []string{}
		}
		for _, v := range e.Env { // Argo CD builds these from a map: sorted here for a stable output
			out.Env = append(out.Env, execEnv{Name: v.Name, Value: v.Value})
		}
		sort.Slice(out.Env, func(i, j int) bool { return out.Env[i].Name < out.Env[j].Name })
		rest.Exec = out
	}
	output := map[string]any{"cluster": cluster, "rest": rest}
	if reach {
		clients, err := kubernetes.NewForConfig(restConfig)
		if err != nil {
			return fmt.Errorf("a client for %s: %w", restConfig.Host, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		review, err := clients.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("reaching %s: %w", restConfig.Host, err)
		}
		output["reach"] = reachOut{Username: review.Status.UserInfo.Username, Groups: review.Status.UserInfo.Groups}
	}
	result, err := json.Marshal(output)
	if err != nil {
		return err
	}
	fmt.Println(string(result))
	return nil
}

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "render":
		err = render(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "clusters":
		err = clusters(os.Args[2:])
	default:
		err = run(len(os.Args) > 1 && os.Args[1] == "-reach")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "argocd: %v\n", err)
		os.Exit(1)
	}
}
