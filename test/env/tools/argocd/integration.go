package main

// The Argo CD ClusterProfile integration's rendering of a profile into an Argo CD cluster Secret, as its
// documentation states it (docs/ARCHITECTURE.md of argoproj-labs/clusterprofile-integration-for-argocd:
// "Reconciliation Flow", "Custom Provider Resolution", "Cluster Information for Exec Plugins"). Its module
// is not served by the Go module proxy this project builds from, so the documented steps are followed here
// with the same library calls it names: the access providers file and BuildConfigFromCP of the upstream
// access library (sigs.k8s.io/cluster-inventory-api/pkg/access), mapped into Argo CD's own ClusterConfig.
//
//	render -providers FILE -namespace ARGOCD_NAMESPACE < clusterprofile.json > secret.json

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	appv1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	inventory "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
)

const (
	// The label Argo CD reads cluster Secrets by.
	secretTypeLabel = "argocd.argoproj.io/secret-type"
	// The label the integration links a Secret to the profile it came from with ("<namespace>-<name>").
	profileOriginLabel = "argocd.argoproj.io/cluster-profile-origin"
)

func render(args []string) error {
	flags := flag.NewFlagSet("render", flag.ContinueOnError)
	providers := flags.String("providers", "", "the access providers file")
	namespace := flags.String("namespace", "argocd", "Argo CD's namespace, where the Secret is written")
	if err := flags.Parse(args); err != nil {
		return err
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	var profile inventory.ClusterProfile
	if err := json.Unmarshal(input, &profile); err != nil {
		return fmt.Errorf("parsing the ClusterProfile: %w", err)
	}
	if len(profile.Status.AccessProviders) == 0 {
		return fmt.Errorf("ClusterProfile %s has no status.accessProviders", profile.Name)
	}
	config, err := access.NewFromFile(*providers)
	if err != nil {
		return fmt.Errorf("reading the access providers file: %w", err)
	}
	rest, err := config.BuildConfigFromCP(&profile)
	if err != nil {
		return fmt.Errorf("BuildConfigFromCP: %w", err)
	}

	// Every label of the profile, then the two of the integration's own.
	labels := map[string]string{}
	for key, value := range profile.Labels {
		labels[key] = value
	}
	labels[secretTypeLabel] = "cluster"
	labels[profileOriginLabel] = profile.Namespace + "-" + profile.Name

	cluster := appv1.ClusterConfig{
		BearerToken: rest.BearerToken,
		TLSClientConfig: appv1.TLSClientConfig{
			Insecure:   rest.Insecure,
			ServerName: rest.ServerName,
			CertData:   rest.CertData,
			KeyData:    rest.KeyData,
			CAData:     rest.CAData,
		},
		DisableCompression: rest.DisableCompression,
	}
	if exec := rest.ExecProvider; exec != nil {
		// The two placeholders the integration fills in an exec argument.
		args := make([]string, 0, len(exec.Args))
		for _, arg := range exec.Args {
			arg = strings.ReplaceAll(arg, "{{ .ClusterProfileName }}", profile.Name)
			arg = strings.ReplaceAll(arg, "{{ .ClusterProfileServer }}", profile.Status.AccessProviders[0].Cluster.Server)
			args = append(args, arg)
		}
		provider := &appv1.ExecProviderConfig{
			Command:            exec.Command,
			Args:               args,
			APIVersion:         exec.APIVersion,
			ProvideClusterInfo: exec.ProvideClusterInfo,
		}
		if len(exec.Env) > 0 {
			provider.Env = map[string]string{}
			for _, variable := range exec.Env {
				provider.Env[variable.Name] = variable.Value
			}
		}
		// The profile's client.authentication.k8s.io/exec extension, kept for the plugin.
		if exec.Config != nil {
			raw, err := json.Marshal(exec.Config)
			if err != nil {
				return fmt.Errorf("the exec extension: %w", err)
			}
			provider.Config = &runtime.RawExtension{Raw: raw}
		}
		cluster.ExecProviderConfig = provider
	}
	encoded, err := json.Marshal(cluster)
	if err != nil {
		return err
	}
	secret := corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + profile.Name, Namespace: *namespace, Labels: labels},
		StringData: map[string]string{"name": profile.Name, "server": rest.Host, "config": string(encoded)},
	}
	out, err := json.Marshal(secret)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
