package main

import "strings"

// lever is one setting of the kube-apiserver: flags, or its Go runtime's
// environment.
type lever struct {
	name string
	// what is the setting, as the report shows it.
	what string
	// flags are kube-apiserver flags, by name without the dashes.
	flags map[string]string
	// env is set for the API server's process (and etcd's, which is not
	// measured).
	env map[string]string
}

// anchor is the kube-apiserver with every default: every API group on,
// the watch cache on with its default sizes, priority and fairness on, and
// Go's collector at GOGC=100 (the control-plane-operator renders GOGC=50,
// kubeapiserver.DefaultGOGC, since this benchmark measured it).
var anchor = lever{name: "anchor", what: "no lever (the anchor)"}

// levers are measured one at a time against the anchor.
var levers = []lever{
	{name: "gogc75", what: "GOGC=75", env: map[string]string{"GOGC": "75"}},
	{name: "gogc50", what: "GOGC=50", env: map[string]string{"GOGC": "50"}},
	{name: "gogc25", what: "GOGC=25", env: map[string]string{"GOGC": "25"}},
	{name: "apf-off", what: "--enable-priority-and-fairness=false", flags: map[string]string{"enable-priority-and-fairness": "false"}},
	{name: "watch-cache-off", what: "--watch-cache=false", flags: map[string]string{"watch-cache": "false"}},
	{name: "events-cache-off", what: "--watch-cache-sizes=events#0,events.events.k8s.io#0", flags: map[string]string{"watch-cache-sizes": "events#0,events.events.k8s.io#0"}},
	{name: "dra-off", what: "--runtime-config=resource.k8s.io/v1=false", flags: map[string]string{"runtime-config": "resource.k8s.io/v1=false"}},
}

func leverNames() string {
	names := make([]string, 0, len(levers))
	for _, l := range levers {
		names = append(names, l.name)
	}
	return strings.Join(names, ", ")
}
