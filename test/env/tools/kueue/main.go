// Kueue's MultiKueue cluster controller, built from the released module sigs.k8s.io/kueue, as cpsync's
// interoperability test runs it: Kueue's Configuration file read by Kueue's own loader (config.Load: strict
// decoding, defaults, validation), its feature gates set from it as Kueue's main sets them, the ClusterProfile
// cache limited to Kueue's namespace by Kueue's own ConfigureClusterProfileCache, and the manager of the
// MultiKueue controllers (multikueue.SetupControllers) given the configuration's `multiKueue.clusterProfile`,
// against the hub. Every half second it prints, one JSON line each, the Active condition of every
// MultiKueueCluster.
//
//	kueue -kubeconfig HUB -config KUEUE_CONFIGURATION
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
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/controller/admissionchecks/multikueue"
	// The batch/job integration, the configuration's default framework, which Kueue's validation looks up.
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/job"
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

func main() {
	// Its own flag set: controller-runtime registers --kubeconfig on the command line's.
	var kubeconfig, configFile string
	set := flag.NewFlagSet("kueue", flag.ExitOnError)
	set.StringVar(&kubeconfig, "kubeconfig", "", "the hub's kubeconfig")
	set.StringVar(&configFile, "config", "", "Kueue's Configuration (controller_manager_config.yaml)")
	_ = set.Parse(os.Args[1:])
	if kubeconfig == "" || configFile == "" {
		fail("-kubeconfig and -config are required")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kueue.AddToScheme(scheme))
	utilruntime.Must(configapi.AddToScheme(scheme))
	utilruntime.Must(inventoryv1alpha1.AddToScheme(scheme))
	// As Kueue's main reads its --config, and sets the feature gates the configuration names.
	_, cfg, err := config.Load(scheme, configFile)
	if err != nil {
		fail("the configuration: %v", err)
	}
	if err := config.ValidateFeatureGates("", cfg.FeatureGates).ToAggregate(); err != nil {
		fail("feature gates: %v", err)
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates); err != nil {
		fail("feature gates: %v", err)
	}
	if !features.Enabled(features.MultiKueueClusterProfile) {
		fail("the configuration does not turn the MultiKueueClusterProfile feature gate on")
	}
	if cfg.MultiKueue == nil || cfg.MultiKueue.ClusterProfile == nil {
		fail("the configuration has no multiKueue.clusterProfile")
	}
	namespace := *cfg.Namespace

	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fail("hub kubeconfig: %v", err)
	}
	options := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// As Kueue's main sets it up: ClusterProfiles are read in Kueue's namespace only.
	if err := config.ConfigureClusterProfileCache(ctx, ctrl.Log, &options, restConfig, cfg); err != nil {
		fail("cluster profile cache: %v", err)
	}
	manager, err := ctrl.NewManager(restConfig, options)
	if err != nil {
		fail("manager: %v", err)
	}
	if err := multikueue.SetupIndexer(ctx, manager.GetFieldIndexer(), namespace); err != nil {
		fail("indexer: %v", err)
	}
	if err := multikueue.SetupControllers(manager, namespace,
		multikueue.WithClusterProfiles(cfg.MultiKueue.ClusterProfile),
		multikueue.WithGCInterval(0),
	); err != nil {
		fail("multikueue: %v", err)
	}
	go report(ctx, manager.GetAPIReader())
	emit(map[string]any{"event": "started", "namespace": namespace})
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
