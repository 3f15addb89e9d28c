// Kueue's MultiKueue cluster controller, built from the released module sigs.k8s.io/kueue, as cpsync's
// interoperability test runs it: the manager of the MultiKueue controllers (multikueue.SetupControllers)
// with the MultiKueueClusterProfile feature gate on and the ClusterProfile credentials providers given as
// Kueue's configuration gives them, against the hub, watching ClusterProfiles in Kueue's namespace only.
// Every half second it prints, one JSON line each, the Active condition of every MultiKueueCluster.
//
//	kueue -kubeconfig HUB -namespace NS -provider-file F
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/admissionchecks/multikueue"
	"sigs.k8s.io/kueue/pkg/features"
)

func emit(fields map[string]any) {
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kueue: "+format+"\n", args...)
	os.Exit(2)
}

// providersFile is the access-providers file the consumers share: {"providers": [{"name", "execConfig"}]}.
type providersFile struct {
	Providers []struct {
		Name       string                  `json:"name"`
		ExecConfig clientcmdapi.ExecConfig `json:"execConfig"`
	} `json:"providers"`
}

func main() {
	// Its own flag set: controller-runtime registers --kubeconfig on the command line's.
	var kubeconfig, namespace, providerFile string
	set := flag.NewFlagSet("kueue", flag.ExitOnError)
	set.StringVar(&kubeconfig, "kubeconfig", "", "the hub's kubeconfig")
	set.StringVar(&namespace, "namespace", "", "Kueue's namespace (where it looks ClusterProfiles up)")
	set.StringVar(&providerFile, "provider-file", "", "the access providers file")
	_ = set.Parse(os.Args[1:])
	if kubeconfig == "" || namespace == "" || providerFile == "" {
		fail("-kubeconfig, -namespace and -provider-file are required")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	// As Kueue's own main sets its --feature-gates.
	if err := utilfeature.DefaultMutableFeatureGate.Set(string(features.MultiKueueClusterProfile) + "=true"); err != nil {
		fail("feature gate: %v", err)
	}
	text, err := os.ReadFile(providerFile)
	if err != nil {
		fail("%v", err)
	}
	var file providersFile
	if err := json.Unmarshal(text, &file); err != nil {
		fail("provider file: %v", err)
	}
	profiles := &configapi.ClusterProfile{}
	for _, provider := range file.Providers {
		profiles.CredentialsProviders = append(profiles.CredentialsProviders, configapi.ClusterProfileCredentialsProvider{
			Name: provider.Name, ExecConfig: provider.ExecConfig,
		})
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kueue.AddToScheme(scheme))
	utilruntime.Must(inventoryv1alpha1.AddToScheme(scheme))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fail("hub kubeconfig: %v", err)
	}
	manager, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// As Kueue's configuration sets it up: ClusterProfiles are read in Kueue's namespace only.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&inventoryv1alpha1.ClusterProfile{}: {Namespaces: map[string]cache.Config{namespace: {}}},
		}},
	})
	if err != nil {
		fail("manager: %v", err)
	}
	if err := multikueue.SetupIndexer(context.Background(), manager.GetFieldIndexer(), namespace); err != nil {
		fail("indexer: %v", err)
	}
	if err := multikueue.SetupControllers(manager, namespace,
		multikueue.WithClusterProfiles(profiles),
		multikueue.WithGCInterval(0),
	); err != nil {
		fail("multikueue: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go report(ctx, manager.GetAPIReader())
	emit(map[string]any{"event": "started"})
	if err := manager.Start(ctx); err != nil {
		fail("manager: %v", err)
	}
}

// report prints each MultiKueueCluster's Active condition every half second.
func report(ctx context.Context, reader client.Reader) {
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		var clusters kueue.MultiKueueClusterList
		if err := reader.List(ctx, &clusters); err != nil {
			continue
		}
		for _, cluster := range clusters.Items {
			active := apimeta.FindStatusCondition(cluster.Status.Conditions, kueue.MultiKueueClusterActive)
			if active == nil {
				continue
			}
			emit(map[string]any{
				"event": "cluster", "name": cluster.Name, "active": string(active.Status),
				"reason": active.Reason, "message": active.Message,
			})
		}
	}
}
