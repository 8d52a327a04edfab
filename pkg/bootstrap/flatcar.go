package bootstrap

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	ignition "github.com/coreos/ignition/v2/config/v3_4"
	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
)

// The flatcar format: an Ignition spec 3.4 config (what Flatcar's Ignition reads on first
// boot). It writes the JoinConfiguration, the kubelet patch and /etc/hostname, and enables a
// oneshot kubeadm.service that joins once, as CAPI's Ignition output does.

const (
	flatcarKubeadmDir    = "/etc/kubeadm"
	flatcarJoinPath      = flatcarKubeadmDir + "/kubeadm-join-config.yaml"
	flatcarPatchesDir    = flatcarKubeadmDir + "/patches"
	flatcarKubeadmUnit   = "kubeadm.service"
	flatcarKubeadmBinary = "kubeadm"
)

// flatcarUnit runs kubeadm join once. Flatcar keeps kubeadm in /opt/bin (image-builder's images)
// or /usr/bin (the Kubernetes sysext). systemd does not look a relative ExecStart= up in the
// unit's Environment=PATH but in its own fixed path, which lacks /opt/bin; ExecSearchPath=
// (systemd 250, Flatcar since 3510) names where it searches, and becomes the process's PATH.
var flatcarUnit = `[Unit]
Description=Join the Kubernetes cluster with kubeadm
Wants=network-online.target
After=network-online.target containerd.service
ConditionPathExists=!/etc/kubernetes/kubelet.conf

[Service]
Type=oneshot
RemainAfterExit=yes
ExecSearchPath=/opt/bin:/usr/bin:/usr/sbin:/bin:/sbin
ExecStart=` + flatcarKubeadmBinary + ` join --config ` + flatcarJoinPath + `

[Install]
WantedBy=multi-user.target
`

func dataURL(content string) *string {
	s := "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(content))
	return &s
}

func ignitionFile(p string, mode int, content string) igntypes.File {
	overwrite := true
	return igntypes.File{
		Node: igntypes.Node{Path: p, Overwrite: &overwrite},
		FileEmbedded1: igntypes.FileEmbedded1{
			Mode:     &mode,
			Contents: igntypes.Resource{Source: dataURL(content)},
		},
	}
}

func renderFlatcar(in *Input) ([]byte, error) {
	join, patch, err := kubeadmFiles(in, flatcarJoinPath, flatcarPatchesDir)
	if err != nil {
		return nil, err
	}
	enabled := true
	unit := flatcarUnit
	cfg := igntypes.Config{
		Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()},
		Storage: igntypes.Storage{Files: []igntypes.File{
			ignitionFile("/etc/hostname", 0o644, in.NodeName+"\n"),
			ignitionFile(flatcarJoinPath, 0o600, join),
			ignitionFile(path.Join(flatcarPatchesDir, kubeletPatchFile), 0o600, patch),
		}},
		Systemd: igntypes.Systemd{Units: []igntypes.Unit{
			{Name: flatcarKubeadmUnit, Enabled: &enabled, Contents: &unit},
		}},
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	// Check our own output with Ignition's parser, so a config Ignition rejects never leaves here.
	if _, rpt, err := ignition.Parse(out); err != nil {
		return nil, fmt.Errorf("rendered Ignition config does not parse: %w: %s", err, rpt.String())
	}
	return append(out, '\n'), nil
}

func parseFlatcar(data []byte) (JoinInfo, error) {
	cfg, rpt, err := ignition.Parse(data)
	if err != nil {
		return JoinInfo{}, fmt.Errorf("Ignition: %w: %s", err, rpt.String())
	}
	files := map[string]string{}
	for _, f := range cfg.Storage.Files {
		if f.Contents.Source == nil {
			continue
		}
		content, err := decodeDataURL(*f.Contents.Source)
		if err != nil {
			return JoinInfo{}, fmt.Errorf("file %s: %w", f.Path, err)
		}
		files[f.Path] = content
	}
	// The join configuration is the one the enabled unit hands to kubeadm.
	joinPath := ""
	for _, u := range cfg.Systemd.Units {
		if u.Contents == nil || u.Enabled == nil || !*u.Enabled {
			continue
		}
		searchPath := systemdDefaultSearchPath
		var commands []string
		for _, line := range strings.Split(*u.Contents, "\n") {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "ExecSearchPath="); ok {
				searchPath = strings.Split(v, ":")
			}
			if cmd, ok := strings.CutPrefix(line, "ExecStart="); ok {
				commands = append(commands, cmd)
			}
		}
		for _, cmd := range commands {
			p, ok := kubeadmConfigArg(cmd)
			if !ok {
				continue
			}
			if err := flatcarResolves(u.Name, cmd, searchPath, files); err != nil {
				return JoinInfo{}, err
			}
			joinPath = p
		}
	}
	if joinPath == "" {
		return JoinInfo{}, errors.New("no enabled systemd unit runs `kubeadm join --config <file>`")
	}
	return joinInfoFromFiles(joinPath, files, "the config")
}

// flatcarImageFiles are the executables of a Flatcar image built for Cluster API by image-builder
// (kubeadm, kubelet and the tools in /opt/bin: Flatcar's /usr is read only).
var flatcarImageFiles = map[string]bool{"/opt/bin/kubeadm": true, "/opt/bin/kubelet": true, "/opt/bin/kubectl": true}

// systemdDefaultSearchPath is where systemd (239 and later) looks up an ExecStart= program that is
// not an absolute path, when the unit sets no ExecSearchPath=; Environment=PATH plays no part.
var systemdDefaultSearchPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"}

// flatcarResolves checks an ExecStart= command line as systemd would on a Flatcar image: the
// program (after systemd's prefixes @-:+!) is an absolute path, or a bare name found in the
// search path; it must exist on the image or be written by the config.
func flatcarResolves(unit, cmd string, searchPath []string, written map[string]string) error {
	fields := strings.Fields(cmd)
	if len(fields) == 0 {
		return fmt.Errorf("unit %s: empty ExecStart=", unit)
	}
	program := strings.TrimLeft(fields[0], "@-:+!")
	exists := func(p string) bool { _, ok := written[p]; return ok || flatcarImageFiles[p] }
	switch {
	case path.IsAbs(program):
		if !exists(program) {
			return fmt.Errorf("unit %s: ExecStart= program %s does not exist on a Flatcar image", unit, program)
		}
		return nil
	case strings.Contains(program, "/"):
		return fmt.Errorf("unit %s: ExecStart= program %q is neither an absolute path nor a bare name; systemd refuses the unit", unit, program)
	}
	for _, dir := range searchPath {
		if !path.IsAbs(dir) {
			return fmt.Errorf("unit %s: ExecSearchPath= entry %q is not absolute; systemd refuses the unit", unit, dir)
		}
		if exists(path.Join(dir, program)) {
			return nil
		}
	}
	return fmt.Errorf("unit %s: systemd finds no %s in %s (it does not search the unit's Environment=PATH; name an absolute path or set ExecSearchPath=)",
		unit, program, strings.Join(searchPath, ":"))
}

// decodeDataURL decodes an RFC 2397 data URL, base64 or percent-encoded.
func decodeDataURL(s string) (string, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", fmt.Errorf("source %.40q is not a data URL (the machine would have to fetch it)", s)
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", errors.New("data URL has no ','")
	}
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return "", fmt.Errorf("data URL: %w", err)
		}
		return string(b), nil
	}
	return url.PathUnescape(payload)
}

// IgnitionVersion is the Ignition spec version ("3.4") of the flatcar data, as an
// infrastructure provider that wraps or stores Ignition configs is told it (CAPA's
// spec.ignition.version).
func IgnitionVersion() string {
	return fmt.Sprintf("%d.%d", igntypes.MaxVersion.Major, igntypes.MaxVersion.Minor)
}
