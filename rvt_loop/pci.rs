// SPDX-License-Identifier: GPL-2.0-only

//! The PCI driver: its only job is to give rdmavt a `pci_dev` to print through, for as long as
//! the devices exist. It binds QEMU's `pci-testdev` (1b36:0005) and creates the devices in
//! probe ([`Devices`]). On 7.3 it is a `kernel::pci::Driver`; 6.12's kernel crate has no PCI
//! driver API, so there the `struct pci_driver` is C's (rvt_loop_glue.c) and calls the probe
//! and remove below.

#[cfg(not(rdmavt_kernel_6_12))]
mod imp {
    use kernel::{device::Core, driver, pci, prelude::*};

    use crate::{bindings, Devices};

    struct LoopPci;

    kernel::pci_device_table!(
        PCI_TABLE,
        <LoopPci as pci::Driver>::IdInfo,
        [(pci::DeviceId::from_id(pci::Vendor::REDHAT, 0x5), ())]
    );

    impl pci::Driver for LoopPci {
        type IdInfo = ();
        type Data<'bound> = Devices;
        const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

        fn probe<'bound>(
            pdev: &'bound pci::Device<Core<'_>>,
            _info: Option<&'bound Self::IdInfo>,
        ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
            // CAST: `pci::Device` is a transparent wrapper of `struct pci_dev`. rdmavt gets
            // the pointer; the devices are unregistered (`Devices` dropped) when we unbind,
            // before the PCI device can go away. A second pci-testdev gets ENODEV, which the
            // driver core takes quietly.
            let raw = core::ptr::from_ref(pdev)
                .cast::<bindings::pci_dev>()
                .cast_mut();
            let devs = Devices::new(raw)?;
            dev_info!(pdev, "registered rvt_loop devices\n");
            Ok(devs)
        }
    }

    /// The registered driver; unregistered (unbinding the device) when dropped.
    pub(crate) struct Registration {
        _reg: Pin<KBox<driver::Registration<pci::Adapter<LoopPci>>>>,
    }

    impl Registration {
        /// Registers the driver; a present pci-testdev is probed before this returns.
        pub(crate) fn new(module: &'static ThisModule) -> Result<Self> {
            let reg = driver::Registration::new(c"rvt_loop", module);
            Ok(Self {
                _reg: KBox::pin_init(reg, GFP_KERNEL)?,
            })
        }
    }
}

#[cfg(rdmavt_kernel_6_12)]
mod imp {
    use kernel::{ffi::c_int, prelude::*};

    use crate::{bindings, Devices};

    extern "C" {
        fn rvt_loop_pci_register() -> c_int;
        fn rvt_loop_pci_unregister();
    }

    /// The C driver's probe: creates the devices, served by `pdev`; what to keep as the
    /// device's driver data, or an `ERR_PTR`.
    ///
    /// # Safety
    ///
    /// Called by the C driver's probe with the device being bound.
    #[no_mangle]
    unsafe extern "C" fn rvt_loop_pci_probe(pdev: *mut bindings::pci_dev) -> *mut Devices {
        match Devices::new(pdev).and_then(|devs| Ok(KBox::new(devs, GFP_KERNEL)?)) {
            Ok(devs) => {
                pr_info!("registered rvt_loop devices\n");
                KBox::into_raw(devs)
            }
            Err(e) => e.to_ptr(),
        }
    }

    /// The C driver's remove: the devices go.
    ///
    /// # Safety
    ///
    /// `devs` is what [`rvt_loop_pci_probe`] returned for the device, once.
    #[no_mangle]
    unsafe extern "C" fn rvt_loop_pci_remove(devs: *mut Devices) {
        // SAFETY: the caller's guarantee: a `KBox` of ours.
        drop(unsafe { KBox::from_raw(devs) });
    }

    /// The registered driver; unregistered (unbinding the device) when dropped.
    pub(crate) struct Registration(());

    impl Registration {
        /// Registers the driver; a present pci-testdev is probed before this returns.
        pub(crate) fn new(_module: &'static ThisModule) -> Result<Self> {
            // SAFETY: once, at module load; `Drop` unregisters.
            kernel::error::to_result(unsafe { rvt_loop_pci_register() })?;
            Ok(Self(()))
        }
    }

    impl Drop for Registration {
        fn drop(&mut self) {
            // SAFETY: registered in `new`.
            unsafe { rvt_loop_pci_unregister() };
        }
    }
}

pub(crate) use imp::Registration;
