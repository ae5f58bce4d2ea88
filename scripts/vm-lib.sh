# Shared by scripts/vm-boot, scripts/vagrant-box and scripts/vagrant-up (sourced; not run): what a Debian guest
# built here takes from this machine so that the README's set-up inside it reaches the same package sources as this
# machine does, and whether a KVM guest runs here at all.

vm_site_config() {  # vm_site_config ROOT: this machine's site certificate authorities and pip's config, into ROOT
    local root=$1 f
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then  # a site proxy's authorities, as here
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        chroot "$root" update-ca-certificates >/dev/null
    fi
    for f in /etc/pip.conf /root/.config/pip/pip.conf /root/.pip/pip.conf; do
        if [ -f "$f" ]; then mkdir -p "$root$(dirname "$f")"; cp "$f" "$root$f"; fi
    done
}

vm_pip_dirs() {  # the local directories pip's config names, one per line: a guest mounts each read-only (9p)
    local d
    for d in $( (cat /etc/pip.conf /root/.config/pip/pip.conf 2>/dev/null; env | grep '^PIP_') \
                | grep -oE '(file://)?/[^ ]+' | sed 's|^file://||' | sort -u); do
        d="${d%/simple}"
        if [ -d "$d" ]; then echo "$d"; fi
    done
}

vm_unmount_under() {  # vm_unmount_under DIR: whatever is mounted under DIR (deepest first); never anything else
    local m
    # mmdebstrap mounts proc, sys and dev under the rootfs while it builds; stopped mid-build it can leave them
    for m in $(awk -v w="$1/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || echo "could not unmount $m (a mount this run made; umount it by hand)" >&2
    done
}

vm_kvm_boots() {  # vm_kvm_boots KERNEL DIR: does a KVM guest print KERNEL's first line within 30 s here?
    # No root file system: the kernel panics and qemu exits. Under nested virtualization /dev/kvm may open while no
    # guest runs; this is the only sure test. The guest's console goes to DIR/kvm-probe.log and qemu's own output
    # (it may abort, and the shell's "Aborted" with it) to DIR/kvm-probe.err, where a caller reads why.
    local kernel=$1 dir=$2
    ( timeout -k 5 30 qemu-system-x86_64 -accel kvm -cpu host -smp 1 -m 512 -nographic -no-reboot -monitor none \
        -display none -serial "file:$dir/kvm-probe.log" -kernel "$kernel" \
        -append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1"; true ) >"$dir/kvm-probe.err" 2>&1
    grep -q "Linux version" "$dir/kvm-probe.log" 2>/dev/null
}
