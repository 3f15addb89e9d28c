// A ClusterProfile consumer built from other people's code, for cpsync's interoperability tests: the
// upstream access library (sigs.k8s.io/cluster-inventory-api/pkg/access), client-go's exec credential
// path, and multicluster-runtime's cluster-inventory-api provider. It prints one JSON object per line.
//
//	consumer tokens  -kubeconfig HUB -namespace NS -provider-file F
//	    for every profile in NS: build a rest.Config, load its CA, run the exec plugin through client-go
//	consumer reach   -kubeconfig HUB -namespace NS -provider-file F -profile NAME
//	    build the profile's rest.Config and list the member cluster's namespaces with it
//	consumer engage  -kubeconfig HUB -provider-file F [-create-in NS]
//	    run multicluster-runtime with the cluster-inventory-api provider; report engaged/disengaged clusters;
//	    with -create-in, create a ConfigMap in NS of each engaged member (tried again until it is made)
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	clusterinventoryapi "sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api"
	"sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api/kubeconfigstrategy"
)

func init() {
	runtime.Must(clusterinventoryv1alpha1.AddToScheme(scheme.Scheme))
}

var emitting sync.Mutex

// emit prints one line, whole, whichever goroutine asks.
func emit(fields map[string]any) {
	emitting.Lock()
	defer emitting.Unlock()
	fields["at"] = time.Now().UnixMilli()
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "consumer: "+format+"\n", args...)
	os.Exit(2)
}

type options struct {
	kubeconfig, namespace, providerFile, profile, createIn string
}

func parse(args []string) options {
	var o options
	set := flag.NewFlagSet("consumer", flag.ExitOnError)
	set.StringVar(&o.kubeconfig, "kubeconfig", "", "the hub's kubeconfig")
	set.StringVar(&o.namespace, "namespace", "", "the inventory namespace")
	set.StringVar(&o.providerFile, "provider-file", "", "the access providers file")
	set.StringVar(&o.profile, "profile", "", "one ClusterProfile name")
	set.StringVar(&o.createIn, "create-in", "", "engage: the member namespace to create a ConfigMap in")
	_ = set.Parse(args)
	if o.kubeconfig == "" || o.providerFile == "" {
		fail("-kubeconfig and -provider-file are required")
	}
	return o
}

func hubClient(o options) (client.Client, *rest.Config) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		fail("hub kubeconfig: %v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fail("hub client: %v", err)
	}
	return c, cfg
}

func accessConfig(o options) *access.Config {
	providers, err := access.NewFromFile(o.providerFile)
	if err != nil {
		fail("%v", err)
	}
	return providers
}

// recorder answers every request itself and keeps the Authorization header client-go's exec
// authenticator put on it: the plugin's token, taken the way a consumer takes it, with no network.
type recorder struct{ authorization string }

func (r *recorder) RoundTrip(request *http.Request) (*http.Response, error) {
	r.authorization = request.Header.Get("Authorization")
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(strings.NewReader("{}")),
		Request:    request,
	}, nil
}

// tokenKind is what a token looks like without showing it: its prefix up to the first dot, or "jwt".
func tokenKind(token string) string {
	if strings.Count(token, ".") == 2 && strings.HasPrefix(token, "eyJ") {
		return "jwt"
	}
	if i := strings.Index(token, "."); i > 0 && i < 16 {
		return token[:i+1]
	}
	return "opaque"
}

func tokens(o options) {
	hub, _ := hubClient(o)
	providers := accessConfig(o)
	var list clusterinventoryv1alpha1.ClusterProfileList
	if err := hub.List(context.Background(), &list, client.InNamespace(o.namespace)); err != nil {
		fail("list profiles: %v", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		profile := &list.Items[i]
		result := map[string]any{"profile": profile.Name}
		if len(profile.Status.AccessProviders) > 0 {
			result["accessProvider"] = profile.Status.AccessProviders[0].Name
		}
		cfg, err := providers.BuildConfigFromCP(profile)
		if err != nil {
			result["error"] = "build: " + err.Error()
			emit(result)
			continue
		}
		result["built"] = true
		result["caData"] = len(cfg.CAData) > 0
		// What every client of the config does first: its TLS configuration, CA included.
		if _, err := rest.TLSConfigFor(cfg); err != nil {
			result["error"] = "tls: " + err.Error()
			emit(result)
			continue
		}
		rt := &recorder{}
		wrapped, err := rest.HTTPWrappersForConfig(cfg, rt)
		if err != nil {
			result["error"] = "transport: " + err.Error()
			emit(result)
			continue
		}
		request, _ := http.NewRequest(http.MethodGet, cfg.Host+"/version", nil)
		response, err := wrapped.RoundTrip(request)
		if err != nil {
			result["error"] = "exec: " + err.Error()
			emit(result)
			continue
		}
		_ = response.Body.Close()
		token, found := strings.CutPrefix(rt.authorization, "Bearer ")
		if found && token != "" {
			result["token"] = tokenKind(token)
			digest := sha256.Sum256([]byte(token))
			result["tokenSha256"] = hex.EncodeToString(digest[:])
		}
		emit(result)
	}
}

func reach(o options) {
	hub, _ := hubClient(o)
	providers := accessConfig(o)
	if o.profile == "" || o.namespace == "" {
		fail("-profile and -namespace are required")
	}
	var profile clusterinventoryv1alpha1.ClusterProfile
	if err := hub.Get(context.Background(), client.ObjectKey{Namespace: o.namespace, Name: o.profile}, &profile); err != nil {
		fail("get profile: %v", err)
	}
	result := map[string]any{"profile": o.profile}
	cfg, err := providers.BuildConfigFromCP(&profile)
	if err != nil {
		result["error"] = "build: " + err.Error()
		emit(result)
		return
	}
	cfg.Timeout = 20 * time.Second
	member, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		result["error"] = "client: " + err.Error()
		emit(result)
		return
	}
	namespaces, err := member.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			result["status"] = status.Status().Code
		}
		result["error"] = err.Error()
		emit(result)
		return
	}
	names := []string{}
	for _, ns := range namespaces.Items {
		names = append(names, ns.Name)
	}
	result["namespaces"] = names
	emit(result)
}

// engage runs multicluster-runtime with the cluster-inventory-api provider and reports, every half
// second, which clusters the provider holds (engaged) and which it let go (disengaged); for each one
// engaged it lists the member's namespaces through the engaged cluster's own client.
func engage(o options) {
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	_, cfg := hubClient(o)
	providers := accessConfig(o)
	provider, err := clusterinventoryapi.New(clusterinventoryapi.Options{
		KubeconfigStrategyOption: kubeconfigstrategy.Option{
			CredentialsProvider: &kubeconfigstrategy.CredentialsProviderOption{Provider: providers},
		},
	})
	if err != nil {
		fail("provider: %v", err)
	}
	manager, err := mcmanager.New(cfg, provider, mcmanager.Options{
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fail("manager: %v", err)
	}
	if err := provider.SetupWithManager(manager); err != nil {
		fail("setup: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hub, _ := hubClient(o)
	go watchEngaged(ctx, hub, provider, o.createIn)
	emit(map[string]any{"event": "started"})
	if err := manager.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fail("manager: %v", err)
	}
}

// watchEngaged reports each cluster the provider engages (and lets go), and with createIn makes an object in it.
// It reaches each newly engaged member in a goroutine of its own, as a multicluster-runtime controller's
// per-cluster sources start their informers (and so run the exec plugin) side by side; one member's slow
// credentials or list never hold up another's.
func watchEngaged(ctx context.Context, hub client.Client, provider *clusterinventoryapi.Provider, createIn string) {
	var lock sync.Mutex
	engaged := map[string]bool{}
	created := map[string]bool{}
	refusal := map[string]string{}
	// The members a goroutine is reaching now: one at a time per member, so its lines keep their order.
	busy := map[string]bool{}
	reach := func(name string, cluster cluster.Cluster, first bool) {
		if first {
			var namespaces corev1.NamespaceList
			event := map[string]any{"event": "engaged", "cluster": name}
			if err := cluster.GetClient().List(ctx, &namespaces); err != nil {
				event["error"] = err.Error()
			} else {
				event["namespaces"] = len(namespaces.Items)
			}
			emit(event)
		}
		if createIn == "" {
			return
		}
		lock.Lock()
		done := created[name]
		lock.Unlock()
		if done {
			return
		}
		// What a consumer does with a member it engaged: an object of its own there, through the
		// engaged cluster's client (refused until the consumer's identity is let in).
		object := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "engaged." + strings.ReplaceAll(name, "/", "."), Namespace: createIn},
			Data:       map[string]string{"cluster": name},
		}
		err := cluster.GetClient().Create(ctx, object)
		lock.Lock()
		defer lock.Unlock()
		if err == nil || apierrors.IsAlreadyExists(err) {
			created[name] = true
			emit(map[string]any{"event": "created", "cluster": name, "object": object.Name})
		} else if refusal[name] != err.Error() {
			refusal[name] = err.Error()
			emit(map[string]any{"event": "refused", "cluster": name, "error": err.Error()})
		}
	}
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		var list clusterinventoryv1alpha1.ClusterProfileList
		known := map[string]bool{}
		if err := hub.List(ctx, &list); err == nil {
			for _, profile := range list.Items {
				known[profile.Namespace+"/"+profile.Name] = true
			}
		}
		lock.Lock()
		for name := range engaged {
			known[name] = true
		}
		for name := range known {
			if busy[name] {
				continue
			}
			cluster, err := provider.Get(ctx, multicluster.ClusterName(name))
			holds := err == nil
			first := holds && !engaged[name]
			if first {
				engaged[name] = true
			} else if !holds && engaged[name] {
				delete(engaged, name)
				delete(created, name)
				emit(map[string]any{"event": "disengaged", "cluster": name})
			}
			if first || (holds && createIn != "" && !created[name]) {
				busy[name] = true
				go func(name string) {
					defer func() {
						lock.Lock()
						delete(busy, name)
						lock.Unlock()
					}()
					reach(name, cluster, first)
				}(name)
			}
		}
		lock.Unlock()
	}
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: consumer tokens|reach|engage [flags]")
	}
	o := parse(os.Args[2:])
	switch os.Args[1] {
	case "tokens":
		tokens(o)
	case "reach":
		reach(o)
	case "engage":
		engage(o)
	default:
		fail("unknown command %q", os.Args[1])
	}
}
