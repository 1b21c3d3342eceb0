#pragma once
// The Python the doctor runs in the target interpreter. It prints one JSON line describing
// itself, then blocks on stdin so the doctor can read its /proc/PID/maps while the libraries
// that `import torch, numpy` pulled in are still mapped. Never raises: every failure becomes
// a field. A tiny matmul in torch and numpy makes lazily loaded BLAS/OpenMP libraries appear.
namespace ts::doctor {

inline constexpr const char* kProbeScript = R"PY(
import json, os, sys, platform
r = {"pid": os.getpid(), "python": sys.executable, "python_version": platform.python_version()}
try:
    import numpy
    r["numpy_version"] = numpy.__version__
    a = numpy.ones((64, 64)); a.dot(a)
except Exception as e:
    r["numpy_error"] = repr(e)[:300]
try:
    import torch
    r["torch_version"] = str(torch.__version__)
    r["torch_dir"] = os.path.dirname(torch.__file__)
    r["torch_cuda"] = torch.version.cuda or ""
    r["cuda_built"] = bool(torch.version.cuda) or bool(getattr(torch.version, "hip", None))
    r["num_threads"] = torch.get_num_threads()
    r["num_interop_threads"] = torch.get_num_interop_threads()
    t = torch.ones(64, 64); t @ t
    avail = bool(torch.cuda.is_available())
    r["cuda_available"] = avail
    if avail:
        n = torch.cuda.device_count()
        r["cuda_device_count"] = n
        r["devices"] = [{"name": torch.cuda.get_device_name(i),
                         "capability": list(torch.cuda.get_device_capability(i))} for i in range(n)]
        try:
            r["arch_list"] = list(torch.cuda.get_arch_list())
        except Exception:
            pass
        try:
            x = torch.ones(256, 256, device="cuda:0")
            y = (x @ x).sum().item()
            torch.cuda.synchronize()
            r["cuda_probe_ok"] = (y == 256.0 * 256 * 256)
            if not r["cuda_probe_ok"]:
                r["cuda_error"] = "matmul on cuda:0 returned %r, expected %r" % (y, 256.0 ** 3)
        except Exception as e:
            r["cuda_probe_ok"] = False
            r["cuda_error"] = str(e).strip().splitlines()[0][:300] if str(e).strip() else repr(e)
except Exception as e:
    r["torch_error"] = (type(e).__name__ + ": " + str(e))[:300]
sys.stdout.write(json.dumps(r) + "\n")
sys.stdout.flush()
sys.stdin.readline()
)PY";

}  // namespace ts::doctor
