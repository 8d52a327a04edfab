package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// The rocky format: a #cloud-config as CAPI's kubeadm bootstrap provider writes it for a
// worker (bootstrap/kubeadm/pkg/cloudinit/node.go): the JoinConfiguration in write_files under
// /run/kubeadm, a placeholder creating /run/cluster-api, and one runcmd that joins and then
// writes the sentinel file CAPI's tooling looks for.

const (
	cloudConfigHeader = "#cloud-config\n"
	rockyJoinCommand  = "kubeadm join --config " + kubeadmJoinConfigPath +
		" && echo success > /run/cluster-api/bootstrap-success.complete"
)

type cloudInitFile struct {
	Path        string `json:"path"`
	Owner       string `json:"owner,omitempty"`
	Permissions string `json:"permissions,omitempty"`
	Content     string `json:"content"`
}

type cloudConfig struct {
	WriteFiles []cloudInitFile `json:"write_files"`
	RunCmd     []string        `json:"runcmd"`
}

// kubeadmFiles are the join configuration and the kubelet patch, at dir.
func kubeadmFiles(in *Input, joinPath, patchesDir string) (join, patch string, err error) {
	jc, err := newJoinConfiguration(in, patchesDir)
	if err != nil {
		return "", "", err
	}
	if join, err = marshalYAML(jc); err != nil {
		return "", "", err
	}
	if patch, err = marshalYAML(newKubeletConfigPatch(in)); err != nil {
		return "", "", err
	}
	return join, patch, nil
}

func renderRocky(in *Input) ([]byte, error) {
	join, patch, err := kubeadmFiles(in, kubeadmJoinConfigPath, kubeadmPatchesDir)
	if err != nil {
		return nil, err
	}
	cc := cloudConfig{
		WriteFiles: []cloudInitFile{
			{Path: kubeadmJoinConfigPath, Owner: "root:root", Permissions: "0640", Content: join},
			{Path: path.Join(kubeadmPatchesDir, kubeletPatchFile), Owner: "root:root", Permissions: "0640", Content: patch},
			{Path: "/run/cluster-api/placeholder", Owner: "root:root", Permissions: "0640",
				Content: "This placeholder file is used to create the /run/cluster-api sub directory"},
		},
		RunCmd: []string{rockyJoinCommand},
	}
	body, err := yaml.Marshal(cc)
	if err != nil {
		return nil, err
	}
	return append([]byte(cloudConfigHeader), body...), nil
}

func parseRocky(data []byte) (JoinInfo, error) {
	if !bytes.HasPrefix(data, []byte("#cloud-config")) {
		return JoinInfo{}, errors.New("not a #cloud-config document")
	}
	var cc cloudConfig
	if err := yaml.Unmarshal(data, &cc); err != nil {
		return JoinInfo{}, err
	}
	files := map[string]string{}
	for _, f := range cc.WriteFiles {
		files[f.Path] = f.Content
	}
	// The join configuration is the file runcmd hands to kubeadm.
	joinPath := ""
	for _, c := range cc.RunCmd {
		if p, ok := kubeadmConfigArg(c); ok {
			joinPath = p
			break
		}
	}
	if joinPath == "" {
		return JoinInfo{}, errors.New("runcmd runs no `kubeadm join --config <file>`")
	}
	return joinInfoFromFiles(joinPath, files, "write_files")
}

// joinInfoFromFiles reads the JoinConfiguration at joinPath among the files a machine's data
// writes (writer names where they are written), with the kubelet patch it points at.
func joinInfoFromFiles(joinPath string, files map[string]string, writer string) (JoinInfo, error) {
	doc, ok := files[joinPath]
	if !ok {
		return JoinInfo{}, fmt.Errorf("kubeadm join reads %s, which %s does not write", joinPath, writer)
	}
	info, err := joinInfoFromKubeadm([]byte(doc))
	if err != nil {
		return JoinInfo{}, err
	}
	if err := applyPatchFile(&info, []byte(doc), files); err != nil {
		return JoinInfo{}, err
	}
	return info, nil
}

// applyPatchFile reads the kubelet configuration patch from the JoinConfiguration's patch
// directory, when there is one.
func applyPatchFile(info *JoinInfo, joinDoc []byte, files map[string]string) error {
	var jc kubeadmJoinConfiguration
	if err := yaml.Unmarshal(joinDoc, &jc); err != nil {
		return err
	}
	if jc.Patches == nil || jc.Patches.Directory == "" {
		return nil
	}
	if p, ok := files[path.Join(jc.Patches.Directory, kubeletPatchFile)]; ok {
		return info.applyKubeletPatch([]byte(p))
	}
	return nil
}

// kubeadmConfigArg finds `kubeadm join ... --config <path>` in a shell command.
func kubeadmConfigArg(cmd string) (string, bool) {
	fields := strings.Fields(cmd)
	for i := 0; i+1 < len(fields); i++ {
		if path.Base(fields[i]) == "kubeadm" && fields[i+1] == "join" {
			for j := i + 2; j+1 < len(fields); j++ {
				if fields[j] == "--config" {
					return fields[j+1], true
				}
			}
			for j := i + 2; j < len(fields); j++ {
				if v, ok := strings.CutPrefix(fields[j], "--config="); ok {
					return v, true
				}
			}
		}
	}
	return "", false
}
