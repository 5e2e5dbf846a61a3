// SPDX-License-Identifier: GPL-2.0-only

//! The `rdmavt_rs_mcast` KUnit suite: the group tree, attach and detach limits, and freeing
//! what is left at unregister, on groups and QPs built in memory.

mod suite {
    use crate::compat::kunit::{assert, assert_eq};
    use crate::mcast::{
        group::{Group, Member},
        tree::{AttachError, Attached, GroupCount, Limits, NotAttached, Tree},
    };
    use crate::{bindings, lock::spin_lock_init, qp::Qp};
    use kernel::prelude::*;

    use crate::compat::atomic::Relaxed;

    /// A zeroed C struct on the heap (too big for the stack, for `rvt_qp`).
    fn zeroed_box<T>() -> KBox<T> {
        let mut b = KBox::<T>::new_uninit(GFP_KERNEL).expect("allocation");
        // SAFETY: used only for bindgen C structs, for which all zeroes is a valid value.
        unsafe {
            b.as_mut_ptr().write_bytes(0, 1);
            b.assume_init()
        }
    }

    /// A port and a group counter as a device would have them, and QPs with a reference
    /// held by the test (so that a member's put never hits zero and wakes anyone).
    struct Fake {
        port: KBox<bindings::rvt_ibport>,
        count_lock: KBox<bindings::spinlock_t>,
        count: KBox<u32>,
        qps: KVec<KBox<bindings::rvt_qp>>,
    }

    impl Fake {
        fn new(nqps: usize) -> Self {
            let mut f = Fake {
                port: zeroed_box(),
                count_lock: zeroed_box(),
                count: KBox::new(0, GFP_KERNEL).expect("allocation"),
                qps: KVec::new(),
            };
            // SAFETY: fresh, unused locks.
            unsafe {
                spin_lock_init!(&raw mut f.port.lock, c"test port lock");
                spin_lock_init!(&raw mut *f.count_lock, c"test group count lock");
            }
            for n in 0..nqps {
                let mut qp = zeroed_box::<bindings::rvt_qp>();
                qp.refcount.counter = 1;
                qp.ibqp.qp_num = 2 + n as u32;
                f.qps.push(qp, GFP_KERNEL).expect("allocation");
            }
            f
        }

        fn tree(&mut self) -> Tree<'_> {
            // SAFETY: the lock is initialised and the tree holds only our groups.
            unsafe { Tree::lock(&raw mut *self.port) }
        }

        fn count(&mut self) -> GroupCount<'_> {
            // SAFETY: initialised lock protecting the count, both alive as long as `self`.
            unsafe { GroupCount::new(&raw mut *self.count_lock, &raw mut *self.count) }
        }

        fn qp(&mut self, n: usize) -> *mut bindings::rvt_qp {
            &raw mut *self.qps[n]
        }

        fn qp_refs(&self, n: usize) -> i32 {
            self.qps[n].refcount.counter
        }

        /// Attaches QP `n` the way `attach_mcast` does, with the given limits.
        fn attach(
            &mut self,
            n: usize,
            gid: &bindings::ib_gid,
            lid: u16,
            limits: Limits,
        ) -> Result<Attached, AttachError> {
            let group = Group::new(gid, lid).expect("allocation");
            // SAFETY: a fake QP, alive as long as `self`, whose refcount (the only field a
            // member touches) is live; no lock of it is taken.
            let member = Member::new(unsafe { Qp::from_raw(self.qp(n)) }).expect("allocation");
            let (lock, count) = (&raw mut *self.count_lock, &raw mut *self.count);
            // SAFETY: as in `count`.
            let groups = unsafe { GroupCount::new(lock, count) };
            let (res, unused) = self.tree().add(group, member, limits, &groups);
            drop(unused);
            res
        }

        /// Detaches QP `n` the way `detach_mcast` does.
        fn detach(
            &mut self,
            n: usize,
            gid: &bindings::ib_gid,
            lid: u16,
        ) -> Result<bool, NotAttached> {
            let qp = self.qp(n);
            let d = self.tree().remove(gid, lid, qp)?;
            let last = d.was_last();
            d.finish(&self.count());
            Ok(last)
        }

        fn find(&mut self, gid: &bindings::ib_gid, lid: u16) -> Option<*mut bindings::rvt_mcast> {
            let m = self.tree().find_get(gid, lid)?;
            // SAFETY: found in the tree, which still holds it.
            let refs = unsafe { crate::mcast::group::refs(m) }.load(Relaxed);
            // The tree's reference and the finder's.
            assert_eq!(refs, 2);
            // SAFETY: gives back the finder's reference, as hfi1 does.
            unsafe { bindings::rdmavt_rs_mcast_put(m) };
            Some(m)
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            while let Some(m) = self.tree().pop() {
                // SAFETY: out of the tree; the test has no walker.
                drop(unsafe { Group::from_raw(m) });
            }
        }
    }

    const NO_LIMIT: Limits = Limits {
        groups: 16_384,
        qps_per_group: 16,
    };

    fn gid(last: u8) -> bindings::ib_gid {
        let mut raw = [0u8; 16];
        raw[0] = 0xff;
        raw[1] = 0x12;
        raw[15] = last;
        raw[7] = last.rotate_left(3);
        bindings::ib_gid { raw }
    }

    fn insert_find_remove() {
        let mut f = Fake::new(1);
        let g = gid(1);
        assert_eq!(f.attach(0, &g, 0xc001, NO_LIMIT), Ok(Attached::NewGroup));
        assert_eq!(*f.count, 1);
        // The member holds a QP reference.
        assert_eq!(f.qp_refs(0), 2);
        assert!(f.find(&g, 0xc001).is_some());
        // MGID found, MLID differs.
        assert!(f.find(&g, 0xc002).is_none());
        assert!(f.find(&gid(2), 0xc001).is_none());
        assert_eq!(f.detach(0, &g, 0xc001), Ok(true));
        assert!(f.tree().is_empty());
        assert_eq!(*f.count, 0);
        assert_eq!(f.qp_refs(0), 1);
    }

    fn exported_find() {
        let mut f = Fake::new(1);
        let mut g = gid(3);
        assert_eq!(f.attach(0, &g, 0xc003, NO_LIMIT), Ok(Attached::NewGroup));
        // SAFETY: the fake port is set up as a device's is; `g` is valid.
        let m = unsafe { crate::mcast::verbs::rvt_mcast_find(&raw mut *f.port, &mut g, 0xc003) };
        assert!(!m.is_null());
        // SAFETY: `m` is in the tree; the put gives back the finder's reference.
        unsafe {
            assert_eq!((*m).n_attached, 1);
            assert_eq!(
                (*crate::mcast::group::member_of((*m).qp_list.next)).qp,
                f.qp(0)
            );
            bindings::rdmavt_rs_mcast_put(m);
        }
        // SAFETY: as above.
        let none = unsafe { crate::mcast::verbs::rvt_mcast_find(&raw mut *f.port, &mut g, 0xc004) };
        assert!(none.is_null());
    }

    fn join_and_duplicate() {
        let mut f = Fake::new(3);
        let g = gid(4);
        assert_eq!(f.attach(0, &g, 0xc004, NO_LIMIT), Ok(Attached::NewGroup));
        assert_eq!(f.attach(1, &g, 0xc004, NO_LIMIT), Ok(Attached::Joined));
        assert_eq!(
            f.attach(1, &g, 0xc004, NO_LIMIT),
            Ok(Attached::AlreadyMember)
        );
        // The unused duplicate member gave its reference back.
        assert_eq!(f.qp_refs(1), 2);
        assert_eq!(
            f.attach(2, &g, 0xc005, NO_LIMIT),
            Err(AttachError::LidMismatch)
        );
        assert_eq!(f.qp_refs(2), 1);
        assert_eq!(*f.count, 1);
        assert_eq!(f.detach(0, &g, 0xc004), Ok(false));
        // Already detached.
        assert_eq!(f.detach(0, &g, 0xc004), Err(NotAttached));
        // MLID differs.
        assert_eq!(f.detach(1, &g, 0xc005), Err(NotAttached));
        // No such MGID.
        assert_eq!(f.detach(1, &gid(5), 0xc004), Err(NotAttached));
        assert!(f.find(&g, 0xc004).is_some());
        assert_eq!(f.detach(1, &g, 0xc004), Ok(true));
        assert_eq!((f.qp_refs(0), f.qp_refs(1), *f.count), (1, 1, 0));
    }

    fn qps_per_group_limit() {
        let mut f = Fake::new(3);
        let lim = Limits {
            groups: 8,
            qps_per_group: 2,
        };
        let g = gid(6);
        assert_eq!(f.attach(0, &g, 0xc006, lim), Ok(Attached::NewGroup));
        assert_eq!(f.attach(1, &g, 0xc006, lim), Ok(Attached::Joined));
        assert_eq!(f.attach(2, &g, 0xc006, lim), Err(AttachError::Full));
        assert_eq!(Error::from(AttachError::Full).to_errno(), ENOMEM.to_errno());
        assert_eq!(f.qp_refs(2), 1);
        // A freed slot can be taken again.
        assert_eq!(f.detach(0, &g, 0xc006), Ok(false));
        assert_eq!(f.attach(2, &g, 0xc006, lim), Ok(Attached::Joined));
    }

    fn groups_limit() {
        let mut f = Fake::new(1);
        let lim = Limits {
            groups: 2,
            qps_per_group: 16,
        };
        assert_eq!(f.attach(0, &gid(7), 0xc007, lim), Ok(Attached::NewGroup));
        assert_eq!(f.attach(0, &gid(8), 0xc008, lim), Ok(Attached::NewGroup));
        assert_eq!(f.attach(0, &gid(9), 0xc009, lim), Err(AttachError::Full));
        assert_eq!(*f.count, 2);
        assert!(f.find(&gid(9), 0xc009).is_none());
        assert_eq!(f.detach(0, &gid(7), 0xc007), Ok(true));
        assert_eq!(f.attach(0, &gid(9), 0xc009, lim), Ok(Attached::NewGroup));
        assert_eq!(f.qp_refs(0), 3);
    }

    fn many_groups_stay_ordered() {
        let mut f = Fake::new(1);
        // Inserted in a scrambled order, removed in another: every group stays findable.
        let order = |i: u8| i.wrapping_mul(37).wrapping_add(11);
        for i in 0..64 {
            let g = gid(order(i));
            assert_eq!(
                f.attach(0, &g, 0xc000 + u16::from(i), NO_LIMIT),
                Ok(Attached::NewGroup)
            );
        }
        for i in 0..64 {
            assert!(f.find(&gid(order(i)), 0xc000 + u16::from(i)).is_some());
        }
        for i in (0..64).filter(|i| i % 3 == 0) {
            assert_eq!(f.detach(0, &gid(order(i)), 0xc000 + u16::from(i)), Ok(true));
        }
        for i in 0..64 {
            let found = f.find(&gid(order(i)), 0xc000 + u16::from(i)).is_some();
            assert_eq!(found, i % 3 != 0);
        }
        assert_eq!(*f.count, 64 - 22);
    }

    /// The verbs on a fake device of one port: C's checks, and a QP on port 0 (never left
    /// RESET) refused before the ports array is indexed, where C reads `ports[-1]`.
    fn verbs_check_the_qp() {
        let mut f = Fake::new(1);
        let mut rdi = zeroed_box::<bindings::rvt_dev_info>();
        let mut ports = KBox::new([&raw mut *f.port], GFP_KERNEL).expect("allocation");
        rdi.dparms.nports = 1;
        rdi.ports = ports.as_mut_ptr();
        rdi.dparms.props.max_mcast_grp = 4;
        rdi.dparms.props.max_mcast_qp_attach = 2;
        // SAFETY: a fresh, unused lock.
        unsafe { spin_lock_init!(&raw mut rdi.n_mcast_grps_lock, c"test group count lock") };
        let qp = f.qp(0);
        // SAFETY: the fake QP is ours alone; its r_lock is set up before the verbs take it.
        unsafe {
            spin_lock_init!(&raw mut (*qp).r_lock, c"test r_lock");
            (*qp).ibqp.device = &raw mut rdi.ibdev;
        }
        let mut g = gid(10);
        let set = |state: bindings::ib_qp_state, port: u8, qpn: u32| {
            // SAFETY: as above; no verb runs concurrently.
            unsafe {
                (*qp).state = state.0 as u8;
                (*qp).port_num = port;
                (*qp).ibqp.qp_num = qpn;
            }
        };
        // SAFETY: the fake QP's head, with a device whose ports and limits are set up; `g` is
        // valid. Each closure call is one verb call from ib_core.
        let attach = |g: &mut bindings::ib_gid| unsafe {
            crate::mcast::verbs::attach_mcast(&raw mut (*qp).ibqp, g, 0xc00a)
        };
        // SAFETY: as above.
        let detach = |g: &mut bindings::ib_gid| unsafe {
            crate::mcast::verbs::detach_mcast(&raw mut (*qp).ibqp, g, 0xc00a)
        };

        set(bindings::ib_qp_state::IB_QPS_RESET, 0, 5);
        assert_eq!(attach(&mut g), EINVAL.to_errno());
        assert_eq!(detach(&mut g), EINVAL.to_errno());
        set(bindings::ib_qp_state::IB_QPS_RTS, 1, 1);
        assert_eq!(attach(&mut g), EINVAL.to_errno());
        set(bindings::ib_qp_state::IB_QPS_RTS, 2, 5);
        assert_eq!(attach(&mut g), EINVAL.to_errno());
        assert!(f.tree().is_empty());
        set(bindings::ib_qp_state::IB_QPS_RTS, 1, 5);
        assert_eq!(attach(&mut g), 0);
        assert_eq!(rdi.n_mcast_grps_allocated, 1);
        assert!(f.find(&g, 0xc00a).is_some());
        assert_eq!(detach(&mut g), 0);
        assert_eq!(detach(&mut g), EINVAL.to_errno());
        assert_eq!((rdi.n_mcast_grps_allocated, f.qp_refs(0)), (0, 1));
        drop(ports);
    }

    fn pop_frees_everything() {
        let mut f = Fake::new(2);
        for i in 0..5 {
            assert!(f.attach(0, &gid(i), 0xc100, NO_LIMIT).is_ok());
            assert!(f.attach(1, &gid(i), 0xc100, NO_LIMIT).is_ok());
        }
        assert_eq!((f.qp_refs(0), f.qp_refs(1)), (6, 6));
        while let Some(m) = f.tree().pop() {
            // SAFETY: out of the tree; the test has no walker.
            drop(unsafe { Group::from_raw(m) });
        }
        assert!(f.tree().is_empty());
        assert_eq!((f.qp_refs(0), f.qp_refs(1)), (1, 1));
    }

    crate::compat::kunit::kunit_suite!(
        rdmavt_rs_mcast,
        [
            insert_find_remove,
            exported_find,
            join_and_duplicate,
            qps_per_group_limit,
            groups_limit,
            many_groups_stay_ordered,
            verbs_check_the_qp,
            pop_frees_everything,
        ]
    );
}
