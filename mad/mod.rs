// SPDX-License-Identifier: GPL-2.0-only

//! MAD agents: one SMI send agent per port, through which drivers send traps.
//!
//! MAD processing itself (`process_mad`) differs too much between hfi1 and qib to be shared:
//! as in C, rdmavt leaves that verb to the driver.

use kernel::ffi::c_int;

use crate::{bindings, device::Device};

/// Completion of a MAD the agent sent: its only job is to free the buffer.
///
/// # Safety
///
/// Only the kernel calls this, as the callback it was registered as.
unsafe extern "C" fn send_handler(
    _agent: *mut bindings::ib_mad_agent,
    wc: *mut bindings::ib_mad_send_wc,
) {
    // SAFETY: ib_mad hands us the completion of a buffer this agent sent; it is ours to free.
    unsafe { bindings::ib_free_send_mad((*wc).send_buf) };
}

/// The driver's ports, as (0-based index, port).
fn ports(dev: &Device) -> impl Iterator<Item = (c_int, *mut bindings::rvt_ibport)> + '_ {
    (0..dev.dparms().nports).filter_map(move |i| {
        let port = dev.port(i as u32 + 1).ok()?;
        Some((i, port.as_raw()))
    })
}

/// Creates the SMI agent of every port; on failure frees the ones made so far. As in C, the
/// caller carries on without them.
pub(crate) fn create_agents(dev: &Device) {
    for (i, rvp) in ports(dev) {
        // SAFETY: the device is registered with ib_core; `send_handler` matches the type ib_mad
        // calls it with and needs no context.
        let agent = unsafe {
            bindings::ib_register_mad_agent(
                dev.ibdev(),
                i as u32 + 1,
                bindings::ib_qp_type::IB_QPT_SMI,
                core::ptr::null_mut(),
                0,
                Some(send_handler),
                None,
                core::ptr::null_mut(),
                0,
            )
        };
        if kernel::error::from_err_ptr(agent).is_err() {
            unwind_agents(dev);
            return;
        }
        // SAFETY: ports live as long as the device; registration is single-threaded.
        unsafe { (*rvp).send_agent = agent };
        dev.driver().notify_create_mad_agent(i);
    }
}

/// Unregisters the agents a failed `create_agents` made, telling the driver about exactly
/// those ports, as C's error path does.
fn unwind_agents(dev: &Device) {
    for (i, rvp) in ports(dev) {
        // SAFETY: ports live as long as the device; registration is single-threaded.
        let agent = unsafe { core::mem::take(&mut (*rvp).send_agent) };
        if agent.is_null() {
            continue;
        }
        // SAFETY: an agent `create_agents` registered and nothing else holds.
        unsafe { bindings::ib_unregister_mad_agent(agent) };
        dev.driver().notify_free_mad_agent(i);
    }
}

/// Frees every port's agent and SM address handle, telling the driver about each port.
pub(crate) fn free_agents(dev: &Device) {
    for (i, rvp) in ports(dev) {
        // SAFETY: ports live as long as the device; (un)registration is single-threaded, and
        // `send_agent`/`sm_ah` are ours or the driver's objects to release here, as in C.
        unsafe {
            let agent = core::mem::take(&mut (*rvp).send_agent);
            if !agent.is_null() {
                bindings::ib_unregister_mad_agent(agent);
            }
            let sm_ah = core::mem::take(&mut (*rvp).sm_ah);
            if !sm_ah.is_null() {
                bindings::rdmavt_rs_rdma_destroy_ah(&raw mut (*sm_ah).ibah);
            }
        }
        dev.driver().notify_free_mad_agent(i);
    }
}
