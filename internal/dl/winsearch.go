package dl

import "strings"

// The Windows search, in a file of its own without a build constraint so
// that its tests run on Linux with Windows-shaped paths. In order:
//
//  1. each DLL name alone: LoadLibrary's own search (the program's folder,
//     System32, where the driver puts nvcuda.dll and nvml.dll, the PATH);
//  2. CUDA_PATH's bin\x64 (CUDA 13's toolkit) and bin (CUDA 12's);
//  3. the PATH's folders that hold the DLL, named so that an error lists
//     them;
//  4. the bin folders of NVIDIA's Python wheels (nvidia\cu13\bin\x86_64,
//     nvidia\<library>\bin, ...) in the site-packages of an active virtual
//     or conda environment, of the python on the PATH, of the Pythons
//     installed for the user (%LOCALAPPDATA%\Programs\Python), and of the
//     user's site (%APPDATA%\Python).
func (lib Library) windowsCandidates(env Env) []string {
	out := append([]string(nil), lib.DLLs...)
	if cuda := env.Getenv("CUDA_PATH"); cuda != "" {
		for _, dir := range []string{winJoin(cuda, "bin", "x64"), winJoin(cuda, "bin")} {
			for _, dll := range lib.DLLs {
				out = append(out, winJoin(dir, dll))
			}
		}
	}
	for _, dir := range strings.Split(env.Getenv("PATH"), ";") {
		if dir = strings.Trim(dir, `"`); dir == "" {
			continue
		}
		for _, dll := range lib.DLLs {
			if p := winJoin(dir, dll); env.exists(p) {
				out = append(out, p)
			}
		}
	}
	for _, site := range windowsSitePackages(env) {
		for _, w := range lib.Wheels {
			base := strings.TrimSuffix(w, "/lib")
			for _, bin := range []string{`bin\x86_64`, `bin\x64`, "bin"} {
				for _, dll := range lib.DLLs {
					if p := winJoin(site, "nvidia", base, bin, dll); env.exists(p) {
						out = append(out, p)
					}
				}
			}
		}
	}
	return out
}

// windowsSitePackages returns the site-packages folders of an active
// virtual or conda environment, of the python on the PATH, of the Pythons
// installed for the user, and of the user's site, in that order, each once.
func windowsSitePackages(env Env) []string {
	var prefixes []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := env.Getenv(v); p != "" {
			prefixes = append(prefixes, p)
		}
	}
	if py, err := env.LookPath("python"); err == nil {
		// python.exe sits in its prefix, or in a virtual environment's
		// Scripts folder.
		dir := winDir(py)
		if strings.EqualFold(winBase(dir), "Scripts") {
			dir = winDir(dir)
		}
		prefixes = append(prefixes, dir)
	}
	var patterns []string
	for _, prefix := range prefixes {
		patterns = append(patterns, winJoin(prefix, "Lib", "site-packages"))
	}
	if local := env.Getenv("LOCALAPPDATA"); local != "" {
		patterns = append(patterns, winJoin(local, "Programs", "Python", "Python3*", "Lib", "site-packages"))
	}
	if roaming := env.Getenv("APPDATA"); roaming != "" {
		patterns = append(patterns, winJoin(roaming, "Python", "Python3*", "site-packages"))
	}
	return globAll(env, patterns)
}

// winJoin joins path elements with Windows' separator, whatever system
// runs the search (its tests run on Linux).
func winJoin(elem ...string) string {
	parts := make([]string, 0, len(elem))
	for i, e := range elem {
		if i > 0 {
			e = strings.TrimLeft(e, `\/`)
		}
		if i < len(elem)-1 {
			e = strings.TrimRight(e, `\/`)
		}
		if e != "" {
			parts = append(parts, e)
		}
	}
	return strings.Join(parts, `\`)
}

// winDir is the folder of a Windows path: what precedes its last separator.
func winDir(p string) string {
	if i := strings.LastIndexAny(p, `\/`); i >= 0 {
		return p[:i]
	}
	return "."
}

// winBase is a Windows path's last element.
func winBase(p string) string {
	return p[strings.LastIndexAny(p, `\/`)+1:]
}
