# Shared by scripts/vm-boot and scripts/vagrant-box (sourced; not run): what a Debian guest built here takes from
# this machine so that the README's set-up inside it reaches the same package sources as this machine does.

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
