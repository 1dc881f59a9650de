package install

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

type renderFlags struct {
	installFlags
	format     string
	outputs    string
	outputFile string
}

func newRenderCommand() *cobra.Command {
	f := &renderFlags{installFlags: installFlags{Options: DefaultOptions()}}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print what `hypershift install` applies, without touching a cluster",
		Long: `Render prints the objects hypershift install applies. The output applies cleanly
with kubectl apply --server-side -f -.`,
		Example: `  # All objects as YAML
  hypershift install render | kubectl apply --server-side -f -

  # Only the CRDs, as JSON, to a file
  hypershift install render --outputs=crds --format=json --output-file=crds.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.complete(); err != nil {
				return err
			}
			objects, err := f.objects()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.outputFile != "" {
				file, err := os.Create(f.outputFile)
				if err != nil {
					return fmt.Errorf("failed to create %s: %w", f.outputFile, err)
				}
				defer func() { _ = file.Close() }()
				out = file
			}
			return Render(out, f.format, objects)
		},
	}
	fs := cmd.Flags()
	f.addFlags(fs)
	fs.StringVar(&f.format, "format", "yaml", "Output format: yaml or json.")
	fs.StringVar(&f.outputs, "outputs", "all", "What to render: crds, resources or all.")
	fs.StringVar(&f.outputFile, "output-file", "", "Write to this file instead of standard output.")
	return cmd
}

func (f *renderFlags) objects() ([]client.Object, error) {
	var objects []client.Object
	switch f.outputs {
	case "crds", "all":
		crdObjects, err := CRDObjects()
		if err != nil {
			return nil, err
		}
		objects = append(objects, crdObjects...)
	case "resources":
	default:
		return nil, fmt.Errorf("unsupported --outputs %q: use crds, resources or all", f.outputs)
	}
	if f.outputs != "crds" {
		objects = append(objects, ResourceObjects(f.Options)...)
	}
	return objects, nil
}

// Render writes objects as a YAML stream or a JSON v1 List.
func Render(out io.Writer, format string, objects []client.Object) error {
	items := make([]map[string]any, 0, len(objects))
	for _, obj := range objects {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("failed to convert %s: %w", obj.GetName(), err)
		}
		delete(raw, "status")
		if metadata, ok := raw["metadata"].(map[string]any); ok {
			delete(metadata, "creationTimestamp")
		}
		items = append(items, raw)
	}
	switch format {
	case "yaml":
		for _, item := range items {
			raw, err := yaml.Marshal(item)
			if err != nil {
				return fmt.Errorf("failed to render YAML: %w", err)
			}
			if _, err := fmt.Fprintf(out, "---\n%s", raw); err != nil {
				return err
			}
		}
		return nil
	case "json":
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		raw, err := json.MarshalIndent(list, "", "  ")
		if err != nil {
			return fmt.Errorf("failed to render JSON: %w", err)
		}
		_, err = fmt.Fprintf(out, "%s\n", raw)
		return err
	}
	return fmt.Errorf("unsupported --format %q: use yaml or json", format)
}
