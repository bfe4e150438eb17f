# SPDX-License-Identifier: GPL-2.0
#
# vrdma: build the kernel module and the rdma-core provider, install them,
# lint them, and test them in a QEMU VM.
#
#   make                 vrdma.ko + userspace-provider/libvrdma-rdmav34.so
#   make install         module (+depmod), provider, /etc/libibverbs.d/vrdma.driver
#   make uninstall       the reverse
#   make install-dkms-src  the module's source and dkms.conf into
#                        $(DESTDIR)/usr/src/vrdma-VERSION, for dkms add/build
#   make deb             Debian packages vrdma-dkms and ibverbs-provider-vrdma
#                        in build/deb (scripts/build-deb; lintian-checked)
#   make provider-trixie the provider built against Debian 13's libibverbs
#                        (rdma-core 56), unpacked outside the tree
#   make lint            checkpatch --strict and sparse (make C=1)
#   make check           install deps, build, lint, every selftest in VMs
#                        (two at once: VRDMA_CHECK_VMS)
#   make check-long      install deps, build, the long tests (rxe interop, loss,
#                        UCX/MPI, NVMe-oF, NFS, iSER), two lanes at once
#   make check-debug     the same on the debug kernels (scripts/build-debug-kernel),
#                        6.1 then 6.12 (DEBUG_SERIES=6.1 for one)
#   make check-deb       make deb, then deb_install.sh: the packages installed
#                        in a VM (DKMS builds the module there; tens of minutes)
#   make fuzz            the fuzzers for FUZZ_SECONDS each (default 270) and
#                        the full limits test, in the VM; FUZZ_SEED= replays
#   make fuzz-debug      the same on the debug kernels
#   make demo            a vrdma device in the VM, shown with the standard tools,
#                        ending with one SEND traced step by step (trace-send)
#   make bench           vrdma against rdma_rxe with perftest in one VM boot

# The kernel scripts/kernel-release picks (the running one if its headers
# are installed, else Debian's default), unless told otherwise (KVER=, KDIR=).
# The scripts that boot VMs get it as VRDMA_KVER, so they boot that kernel.
KVER ?= $(shell $(dir $(abspath $(lastword $(MAKEFILE_LIST))))scripts/kernel-release)
ifeq ($(KVER),)
KVER := $(shell uname -r)
endif
KDIR ?= /lib/modules/$(KVER)/build
export VRDMA_KVER := $(KVER)
# What "make modules" says it builds for: KVER, or the release of a tree
# named by KDIR= (the debug kernels of scripts/build-debug-kernel).
ifeq ($(origin KDIR),file)
BUILD_FOR := $(KVER)
else
BUILD_FOR := $(or $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null),$(KDIR))
endif

PROVIDER := userspace-provider
SELFTESTS := selftests/vrdma

# The one place the version is written: dkms.conf (and so the packages).
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' \
	$(dir $(abspath $(lastword $(MAKEFILE_LIST))))dkms.conf)
DKMS_SRC_DIR ?= /usr/src/vrdma-$(VERSION)
# What DKMS needs to build vrdma.ko: Kbuild names every object.
DKMS_SOURCES := Kbuild dkms.conf $(sort $(wildcard drivers/vrdma/*.[ch])) \
	$(sort $(wildcard uapi/rdma/*.h))

.PHONY: all modules provider selftests install uninstall lint check \
	check-long check-debug fuzz fuzz-debug demo bench clean \
	install-dkms-src deb provider-trixie check-deb

all: modules provider

modules:
	@echo "vrdma: building for $(BUILD_FOR) ($(KDIR))"
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

provider:
	$(MAKE) -C $(PROVIDER)

selftests: all
	$(MAKE) -C $(SELFTESTS)
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(SELFTESTS)/mr/kmod W=1 modules
	$(MAKE) -C examples
	$(MAKE) -C $(PROVIDER) build/ring_test build/fake_kernel_test

install: all
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) \
		INSTALL_MOD_DIR=updates modules_install
	$(if $(DESTDIR),depmod -b $(DESTDIR) $(KVER),depmod $(KVER))
	$(MAKE) -C $(PROVIDER) install

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/updates/vrdma.ko*
	$(if $(DESTDIR),depmod -b $(DESTDIR) $(KVER),depmod $(KVER))
	$(MAKE) -C $(PROVIDER) uninstall

install-dkms-src:
	@for f in $(DKMS_SOURCES); do \
		echo "install $$f $(DESTDIR)$(DKMS_SRC_DIR)/$$f"; \
		install -D -m 0644 $$f $(DESTDIR)$(DKMS_SRC_DIR)/$$f || exit 1; \
	done

deb:
	scripts/build-deb

provider-trixie:
	scripts/build-provider-trixie

lint:
	scripts/lint

check:
	scripts/check

check-long:
	scripts/check --long

# The debug kernels of scripts/build-debug-kernel that check-debug and
# fuzz-debug run on, one after the other (each is built on first use).
DEBUG_SERIES ?= 6.1 6.12
DEBUG_EACH = set -e; for s in $(DEBUG_SERIES); do VRDMA_DEBUG_SERIES=$$s

check-debug:
	$(DEBUG_EACH) scripts/check --debug-kernel; done

check-deb:
	scripts/check --long deb_install.sh

# make check runs fuzz.sh briefly (45 s per fuzzer); these run it longer,
# with limits.sh filling max_cq, max_pd and max_qp.
FUZZ_SECONDS ?= 270
FUZZ_ENV = VRDMA_FUZZ_SECONDS=$(FUZZ_SECONDS) VRDMA_LIMITS_ALL=1 \
	$(if $(FUZZ_SEED),VRDMA_FUZZ_SEED=$(FUZZ_SEED))

fuzz:
	$(FUZZ_ENV) scripts/check fuzz.sh limits.sh

fuzz-debug:
	$(DEBUG_EACH) $(FUZZ_ENV) scripts/check --debug-kernel fuzz.sh limits.sh; done

demo:
	scripts/demo

bench:
	scripts/bench

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C $(PROVIDER) clean
	$(MAKE) -C $(SELFTESTS) clean
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(SELFTESTS)/mr/kmod clean
	$(MAKE) -C examples clean
	rm -rf build
