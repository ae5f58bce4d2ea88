// verifier-probe: load every program of a BPF object into the running kernel and print one JSON line per
// program: whether the verifier accepted it, its instructions as loaded, the instructions the verifier
// processed (bpf_prog_info.verified_insns, 5.16+) and its native size; where the kernel refused the object, the
// verifier's last lines go to stderr. Issue 58's kernel x program matrix: scripts/vm-boot --only verifier builds
// it statically on the host (it needs libbpf-dev, libelf-dev and zlib1g-dev there, nothing in the guest) and runs
// it in a guest that has only a kernel. Our code, not p4lang's or libbpf's: it links libbpf.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static char log_buf[1 << 22];

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJECT.o\n", argv[0]);
		return 2;
	}
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "verifier-probe: cannot open %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	struct bpf_program *p;
	int rc = bpf_object__load(obj);
	if (rc) {   /* again with the verifier's statistics (BPF_LOG_STATS: a few lines, whatever the program's size;
		       a verbose log of a program too large for the verifier overflows any buffer on older kernels) */
		bpf_object__close(obj);
		obj = bpf_object__open_file(argv[1], NULL);
		if (!obj)
			return 2;
		bpf_object__for_each_program(p, obj) {
			bpf_program__set_log_level(p, 4);
			bpf_program__set_log_buf(p, log_buf, sizeof(log_buf));
		}
		bpf_object__load(obj);
		size_t n = strlen(log_buf);
		fputs(n > 4000 ? log_buf + n - 4000 : log_buf, stderr);
	}
	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		memset(&info, 0, sizeof(info));
		int fd = bpf_program__fd(p);
		if (rc == 0 && fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			printf("{\"program\": \"%s\", \"loaded\": true, \"insns\": %u, \"verified_insns\": %u, "
			       "\"jited_bytes\": %u}\n", bpf_program__name(p), info.xlated_prog_len / 8, info.verified_insns,
			       info.jited_prog_len);
		else
			printf("{\"program\": \"%s\", \"loaded\": false, \"error\": \"%s\"}\n", bpf_program__name(p),
			       strerror(rc < 0 ? -rc : EINVAL));
	}
	bpf_object__close(obj);
	return rc ? 1 : 0;
}
