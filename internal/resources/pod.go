package resources

import (
	"maps"
	"path"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// defaultContainerAnnotation makes kubectl exec and logs pick the Aerospike container, even with sidecars.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// podTemplate is the pod of one rack, without the hash annotations. Everything taken from the spec is
// deep-copied, so callers may change the result.
func podTemplate(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement) corev1.PodTemplateSpec {
	o := c.Spec.PodSpec.DeepCopy()
	if o == nil {
		o = &v1alpha1.PodOverrides{}
	}
	// The user's labels and annotations are added; the operator's own always win, since selectors and
	// restart decisions depend on them.
	labels := maps.Clone(o.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, c.RackSelectorLabels(rack.ID))
	annotations := maps.Clone(o.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[defaultContainerAnnotation] = v1alpha1.AerospikeContainerName
	containers := make([]corev1.Container, 0, 1+len(o.Sidecars))
	containers = append(containers, aerospikeContainer(c, rack, o))
	if c.MonitoringEnabled() {
		containers = append(containers, exporterContainer(c, o))
	}
	for _, s := range o.Sidecars {
		containers = append(containers, s.Container)
	}
	var inits []corev1.Container
	if prepare := prepareVolumesContainer(c, o); prepare != nil {
		inits = append(inits, *prepare)
	}
	inits = append(inits, configInitContainer(c, o), configReportContainer(c, o))
	for _, s := range o.InitContainers {
		inits = append(inits, s.Container)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers:                inits,
			Containers:                    containers,
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: v1alpha1.PodConditionAerospikeReady}},
			Volumes:                       podVolumes(c, rack, o),
			Affinity:                      affinity(c, o, rack),
			NodeSelector:                  nodeSelector(o, rack),
			Tolerations:                   tolerations(o, rack),
			TopologySpreadConstraints:     topologySpread(c, o, rack),
			SecurityContext:               o.SecurityContext,
			ServiceAccountName:            o.ServiceAccountName,
			ImagePullSecrets:              o.ImagePullSecrets,
			PriorityClassName:             o.PriorityClassName,
			TerminationGracePeriodSeconds: o.TerminationGracePeriodSeconds,
			HostNetwork:                   o.HostNetwork,
			DNSPolicy:                     dnsPolicy(o),
			DNSConfig:                     o.DNSConfig,
		},
	}
}

// dnsPolicy is the user's, or ClusterFirstWithHostNet with host networking: the Kubernetes default for a
// host-network pod (Default) resolves through the node's resolver, where the mesh seeds' names (the
// headless Service's) do not exist.
func dnsPolicy(o *v1alpha1.PodOverrides) corev1.DNSPolicy {
	if o.DNSPolicy == "" && o.HostNetwork {
		return corev1.DNSClusterFirstWithHostNet
	}
	return o.DNSPolicy
}

// securityContext is spec.podSpec.containerSecurityContext, for every container the operator adds.
func securityContext(o *v1alpha1.PodOverrides) *corev1.SecurityContext {
	return o.ContainerSecurityContext.DeepCopy()
}

// aerospikeContainer runs the image as it is: no command or args, so the image's entrypoint
// (as-tini-static -r SIGUSR1 -t SIGTERM) stays PID 1 and a WarmRestart (SIGUSR1) restarts asd in place.
// There is no liveness probe: tini already restarts asd, and a probe killing a node that is slowly
// rebuilding its index from disk would only make the outage longer.
func aerospikeContainer(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement,
	o *v1alpha1.PodOverrides) corev1.Container {
	ctr := corev1.Container{
		Name:  v1alpha1.AerospikeContainerName,
		Image: c.Spec.Image,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(config.ServicePort)},
			},
			PeriodSeconds:    5,
			TimeoutSeconds:   1,
			SuccessThreshold: 1,
			FailureThreshold: 3,
		},
	}
	for _, p := range aerospikePorts {
		ctr.Ports = append(ctr.Ports, corev1.ContainerPort{Name: p.name, ContainerPort: p.port, Protocol: corev1.ProtocolTCP})
	}
	if c.ExternalAccessType() == v1alpha1.ExternalHostPort {
		// The service port on the node's address: the scheduler places no two pods that ask for one
		// host port on one node.
		ctr.Ports[0].HostPort = c.ExternalHostPort()
	}
	if o.Resources != nil {
		ctr.Resources = *o.Resources
	}
	ctr.SecurityContext = securityContext(o)
	// Both config volumes are mounted: asd reads its own copy, and the operator copies the ConfigMap's
	// file over it (exec cp) on the pod's turn. The ConfigMap is mounted as a directory, not with subPath,
	// so that the kubelet refreshes the file in place.
	ctr.VolumeMounts = configMounts()
	if smd := config.SMDPath(c, rack); !storageMountedAt(c, smd) {
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: SMDVolume, MountPath: smd})
	}
	addStorageMounts(&ctr, StorageVolumes(c))
	return ctr
}

// exporterContainer is the Aerospike Prometheus exporter, reading the node of its own pod over
// loopback (its image's template takes AS_HOST, AS_PORT and AGENT_BIND_PORT).
// The user's variables (spec.monitoring.env) come first, so that the operator's, later, win: the kubelet
// takes the last of two variables with one name.
func exporterContainer(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides) corev1.Container {
	port := c.ExporterPort()
	m := c.Spec.Monitoring
	env := make([]corev1.EnvVar, 0, len(m.Env)+3)
	for _, e := range m.Env {
		if !slices.Contains(exporterEnvNames, e.Name) {
			env = append(env, *e.DeepCopy())
		}
	}
	ctr := corev1.Container{
		Name:  v1alpha1.ExporterContainerName,
		Image: c.ExporterImage(),
		Env: append(env,
			corev1.EnvVar{Name: exporterEnvNames[0], Value: "127.0.0.1"},
			corev1.EnvVar{Name: exporterEnvNames[1], Value: strconv.Itoa(int(config.ServicePort))},
			corev1.EnvVar{Name: exporterEnvNames[2], Value: strconv.Itoa(int(port))},
		),
		Ports:           []corev1.ContainerPort{{Name: MetricsPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		SecurityContext: securityContext(o),
	}
	if r := m.Resources; r != nil {
		ctr.Resources = *r
	}
	return ctr
}

// exporterEnvNames are the exporter's variables the operator sets: host, port, bind port.
var exporterEnvNames = []string{"AS_HOST", "AS_PORT", "AGENT_BIND_PORT"}

// configInitContainer copies the ConfigMap's file into the pod's own copy before asd starts. It runs
// the Aerospike image (no other image to pull) with the container's resources, which adds nothing to
// the pod's requests (a pod requests the larger of its init and its regular containers).
func configInitContainer(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides) corev1.Container {
	env := []corev1.EnvVar{downwardEnv(podNameEnv, "metadata.name")}
	node := ""
	if c.AddressFollowsNode() {
		env, node = append(env, downwardEnv(nodeNameEnv, "spec.nodeName")), "$("+nodeNameEnv+")"
	}
	ctr := corev1.Container{
		Name:  ConfigInitContainer,
		Image: c.Spec.Image,
		// The kubelet expands $(POD_NAME) and $(NODE_NAME) in the command: each pod copies its own file,
		// and, when its address is its node's, the one written for the node it runs on.
		Command:         CopyConfigCommand(config.PodFileKey("$("+podNameEnv+")", node)),
		Env:             env,
		VolumeMounts:    configMounts(),
		SecurityContext: securityContext(o),
	}
	if o.Resources != nil {
		ctr.Resources = *o.Resources
	}
	return ctr
}

// configReportContainer copies the pod's own file to its termination log (ConfigReportContainer), with
// the same image, resources and security as the copy.
func configReportContainer(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides) corev1.Container {
	ctr := configInitContainer(c, o)
	ctr.Name, ctr.Env = ConfigReportContainer, nil
	ctr.Command = []string{"cp", path.Join(config.ConfigDir, config.FileName), corev1.TerminationMessagePathDefault}
	ctr.VolumeMounts = []corev1.VolumeMount{{Name: ConfigVolume, MountPath: config.ConfigDir, ReadOnly: true}}
	return ctr
}

// CopiedConfig is the config identity the pod's report container found in the file the pod copied when
// it started ("" when it has not reported: a pod created by an older operator, or not started yet).
func CopiedConfig(pod *corev1.Pod) string {
	s := containerStatus(pod.Status.InitContainerStatuses, ConfigReportContainer)
	if s == nil || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		return ""
	}
	return config.CopiedHash(s.State.Terminated.Message)
}

// podNameEnv is the init container's variable holding its pod's name (the downward API).
const podNameEnv = "POD_NAME"

func downwardEnv(name, field string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: field}}}
}

// CopyConfigCommand copies the pod's own file (key, PodFileKeyOf) from the mounted ConfigMap to where
// asd reads it. The init container runs it at start, and the operator runs it (exec, no shell) on a
// pod's turn.
func CopyConfigCommand(key string) []string {
	return []string{"cp", path.Join(config.ConfigMapDir, key), path.Join(config.ConfigDir, config.FileName)}
}

// ReadConfigMapFileCommand prints the pod's own file (key) of the ConfigMap as the kubelet has projected
// it into the pod so far (exec, no shell).
func ReadConfigMapFileCommand(key string) []string {
	return []string{"cat", path.Join(config.ConfigMapDir, key)}
}

func configMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: ConfigVolume, MountPath: config.ConfigDir},
		{Name: ConfigMapVolume, MountPath: config.ConfigMapDir, ReadOnly: true},
	}
}

// storageMountedAt reports whether a Filesystem storage volume is mounted exactly at p: a user who wants
// SMD (secondary index definitions, UDFs) to survive pod deletion puts a volume at <work-directory>/smd,
// and the emptyDir steps aside.
func storageMountedAt(c *v1alpha1.AerospikeCluster, p string) bool {
	for _, v := range StorageVolumes(c) {
		if VolumeMode(v) == corev1.PersistentVolumeFilesystem && v.Path == p {
			return true
		}
	}
	return false
}

func podVolumes(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement, o *v1alpha1.PodOverrides) []corev1.Volume {
	vols := []corev1.Volume{{
		Name: ConfigMapVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: c.ConfigMapName(rack.ID)},
		}},
	}, {
		Name: ConfigVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	}}
	if !storageMountedAt(c, config.SMDPath(c, rack)) {
		vols = append(vols, corev1.Volume{
			Name: SMDVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		})
	}
	if len(StorageVolumes(c)) > 0 {
		vols = append(vols, volumePlanVolume())
	}
	for _, v := range o.Volumes {
		vols = append(vols, v.Volume)
	}
	return vols
}

// OperatorVolumes are the names of the pod volumes the operator adds (the storage volumes' claims aside).
var OperatorVolumes = []string{ConfigMapVolume, ConfigVolume, SMDVolume, VolumePlanVolume}

// nodeSelector merges the rack's node selector over the cluster's, then the rack's placement over both:
// the more specific wins.
func nodeSelector(o *v1alpha1.PodOverrides, rack v1alpha1.RackPlacement) map[string]string {
	sel := maps.Clone(o.NodeSelector)
	set := func(k, v string) {
		if v == "" {
			return
		}
		if sel == nil {
			sel = map[string]string{}
		}
		sel[k] = v
	}
	if r := rack.Rack; r != nil {
		for _, k := range slices.Sorted(maps.Keys(r.NodeSelector)) {
			set(k, r.NodeSelector[k])
		}
		set(corev1.LabelTopologyZone, r.Zone)
		set(corev1.LabelHostname, r.NodeName)
	}
	return sel
}

// tolerations are the cluster's and then the rack's, a rack's toleration equal to one of the cluster's
// left out.
func tolerations(o *v1alpha1.PodOverrides, rack v1alpha1.RackPlacement) []corev1.Toleration {
	out := slices.Clone(o.Tolerations)
	if rack.Rack == nil {
		return out
	}
	for _, t := range rack.Rack.Tolerations {
		if !slices.ContainsFunc(out, func(have corev1.Toleration) bool { return equality.Semantic.DeepEqual(have, t) }) {
			out = append(out, t)
		}
	}
	return out
}

// topologySpread is the cluster's constraints with the rack's over them: Kubernetes allows one constraint
// per topologyKey and whenUnsatisfiable, so the rack's replaces the cluster's with the same pair. A
// constraint without a labelSelector counts the cluster's pods (Kubernetes would count none).
func topologySpread(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides,
	rack v1alpha1.RackPlacement) []corev1.TopologySpreadConstraint {
	out := slices.Clone(o.TopologySpreadConstraints)
	if rack.Rack != nil {
		for _, t := range rack.Rack.TopologySpreadConstraints {
			i := slices.IndexFunc(out, func(have corev1.TopologySpreadConstraint) bool {
				return have.TopologyKey == t.TopologyKey && have.WhenUnsatisfiable == t.WhenUnsatisfiable
			})
			if i >= 0 {
				out[i] = t
			} else {
				out = append(out, t)
			}
		}
	}
	for i := range out {
		if out[i].LabelSelector == nil {
			out[i].LabelSelector = &metav1.LabelSelector{MatchLabels: c.SelectorLabels()}
		}
	}
	return out
}

// affinity is the cluster's affinity with each part the rack sets (node affinity, pod affinity, pod
// anti-affinity) replacing the cluster's. Without either, the pods prefer distinct nodes: two Aerospike
// nodes on one Kubernetes node could hold both copies of a partition and lose them together.
func affinity(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides, rack v1alpha1.RackPlacement) *corev1.Affinity {
	a := o.Affinity
	if rack.Rack != nil && rack.Rack.Affinity != nil {
		r := rack.Rack.Affinity.Affinity
		merged := &corev1.Affinity{}
		if a != nil {
			merged = a.DeepCopy()
		}
		if r.NodeAffinity != nil {
			merged.NodeAffinity = r.NodeAffinity.DeepCopy()
		}
		if r.PodAffinity != nil {
			merged.PodAffinity = r.PodAffinity.DeepCopy()
		}
		if r.PodAntiAffinity != nil {
			merged.PodAntiAffinity = r.PodAntiAffinity.DeepCopy()
		}
		a = merged
	}
	if a != nil {
		return a
	}
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: c.SelectorLabels()},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}
