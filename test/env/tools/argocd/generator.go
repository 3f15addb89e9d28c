package main

// The ApplicationSet controller's cluster generator, Argo CD's own code (github.com/argoproj/argo-cd/v3
// applicationset/generators: NewClusterGenerator and GenerateParams), run as the controller runs it: over the
// cluster Secrets in Argo CD's namespace, listed with a controller-runtime client of the cluster Argo CD runs on,
// with the ApplicationSet's own selector.
//
//	clusters -kubeconfig FILE -namespace ARGOCD_NAMESPACE < applicationset.json > params.json
//
// It prints, for each of the ApplicationSet's generators (each must be a cluster generator), the parameters it
// generated: one object per cluster it selected (name, nameNormalized, server, project, metadata), as a JSON array
// of arrays in the generators' order.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/argoproj/argo-cd/v3/applicationset/generators"
	appv1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func clusters(args []string) error {
	flags := flag.NewFlagSet("clusters", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "the kubeconfig of the cluster Argo CD runs on")
	namespace := flags.String("namespace", "argocd", "Argo CD's namespace, where its cluster Secrets are")
	if err := flags.Parse(args); err != nil {
		return err
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	var appSet appv1.ApplicationSet
	if err := json.Unmarshal(input, &appSet); err != nil {
		return fmt.Errorf("parsing the ApplicationSet: %w", err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("a client of %s: %w", config.Host, err)
	}
	generator := generators.NewClusterGenerator(c, *namespace)
	out := make([][]map[string]any, 0, len(appSet.Spec.Generators))
	for i := range appSet.Spec.Generators {
		spec := &appSet.Spec.Generators[i]
		if spec.Clusters == nil {
			return fmt.Errorf("generator %d is not a cluster generator", i)
		}
		params, err := generator.GenerateParams(spec, &appSet, c)
		if err != nil {
			return fmt.Errorf("generator %d: %w", i, err)
		}
		if params == nil {
			params = []map[string]any{}
		}
		out = append(out, params)
	}
	encoded, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(encoded))
	return nil
}
