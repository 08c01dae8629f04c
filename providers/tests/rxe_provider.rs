//! `impl Provider for Rxe` end to end without RDMA: a memfd stands in for the uverbs fd. The
//! "kernel" lays its rings out in the memfd at the offsets its fake create responses name,
//! finish_* mmaps them exactly as it would map rxe's cookies, and every doorbell or
//! REQ_NOTIFY_CQ write() lands at the memfd's file position, where the test reads it back.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use providers::rxe::cqe::encode_wc;
use providers::rxe::layout::*;
use providers::rxe::mem::{Mapping, MmInfo};
use providers::rxe::queue::RingAccess;
use providers::rxe::Rxe;
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, Provider, QpCaps, QpCreated, QpInitAttr, QpState,
    QpType, SrqCreated,
};
use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, WcOpcode, WorkCompletion, WrOpcode};

mod support;
use support::rxe::{rc_attr, rd, wr_bytes};

const CQ_OFF: u64 = 1 << 20;
const SQ_OFF: u64 = CQ_OFF + 4096;
const RQ_OFF: u64 = SQ_OFF + 4096;
const SRQ_OFF: u64 = RQ_OFF + 4096;

fn memfd() -> OwnedFd {
    // SAFETY: a valid NUL-terminated name; the result is checked.
    let fd = unsafe { libc::memfd_create(c"rxe-mock".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: fd was just created and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: valid fd; plain integer argument.
    assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 4 << 20) }, 0);
    fd
}

/// The memfd's file position: bytes written by doorbell/notify commands so far.
fn written(fd: &OwnedFd) -> i64 {
    // SAFETY: valid fd; lseek with SEEK_CUR and offset 0 only reads the position.
    unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_CUR) }
}

fn pread(fd: &OwnedFd, off: i64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    // SAFETY: b is a valid writable buffer of len bytes.
    let n = unsafe {
        libc::pread(
            fd.as_raw_fd(),
            b.as_mut_ptr() as *mut libc::c_void,
            len,
            off,
        )
    };
    assert_eq!(n as usize, len);
    b
}

fn mminfo(off: u64, size: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&off.to_ne_bytes());
    b[8..12].copy_from_slice(&size.to_ne_bytes());
    b
}

/// The mock kernel's own view of a ring: a second mapping of the same memfd pages, with the
/// header written as rxe writes it at create time.
fn kernel_ring(fd: &OwnedFd, off: u64, log2: u32, slots: u32) -> Mapping {
    let mi = MmInfo {
        offset: off,
        size: 4096,
    };
    // SAFETY: the test's "kernel" side; it touches the pages only through the ring protocol
    // (header atomics, and slots it owns), like rxe does.
    let m = unsafe { Mapping::map(std::os::fd::AsFd::as_fd(fd), mi, "mock") }.unwrap();
    m.init_header(log2, slots);
    m
}

fn dev() -> DeviceDesc {
    DeviceDesc {
        ibdev: "rxe0".into(),
        uverbs: "uverbs0".into(),
        driver_id: 14,
        driver_abi: 2,
    }
}

#[test]
fn provider_end_to_end_over_a_memfd() {
    let fd = Arc::new(memfd());
    let kcq = kernel_ring(&fd, CQ_OFF, 7, 16);
    let ksq = kernel_ring(&fd, SQ_OFF, 8, 8);
    let krq = kernel_ring(&fd, RQ_OFF, 6, 8);

    assert_eq!(Rxe::context_udata(&dev(), &Default::default()).req.len(), 0);
    let rxe = Rxe::new_context(fd.clone(), &dev(), &[], &Default::default()).unwrap();

    // CQ.
    let (prep, cqe, ud) = rxe.prepare_cq(15).unwrap();
    assert_eq!((cqe, ud.req.len(), ud.resp_len), (15, 0, 16));
    assert!(
        rxe.finish_cq((), &CqCreated { handle: 1, cqe: 15 }, &[0u8; 8])
            .is_err(),
        "short response"
    );
    let mut cq = rxe
        .finish_cq(
            prep,
            &CqCreated { handle: 1, cqe: 15 },
            &mminfo(CQ_OFF, 4096),
        )
        .unwrap();
    assert_eq!(cq.capacity(), 15);

    // QP: no driver request, 32-byte response {rq_mi, sq_mi}.
    let attr = rc_attr(false);
    let (prep, ud) = rxe.prepare_qp(&attr).unwrap();
    assert_eq!((ud.req.len(), ud.resp_len), (0, 32));
    let mut resp = [0u8; 32];
    resp[..16].copy_from_slice(&mminfo(RQ_OFF, 4096));
    resp[16..].copy_from_slice(&mminfo(SQ_OFF, 4096));
    let created = QpCreated {
        handle: 7,
        qpn: 17,
        caps: QpCaps {
            max_inline_data: 16,
            ..attr.caps
        },
    };
    let mut qp = rxe.finish_qp(prep, &attr, &created, &resp).unwrap();
    assert_eq!((qp.send_capacity(), qp.recv_capacity()), (7, 7));

    let sg = [Sge {
        addr: 0x1000,
        length: 32,
        lkey: 1,
    }];
    let mut wr = SendWr::new(42, WrOpcode::RdmaWrite, &sg);
    wr.flags = SendFlags::SIGNALED;
    wr.remote = RemoteAddr {
        addr: 0x8000,
        rkey: 2,
    };

    // Before RTS: refused, nothing written, no syscall.
    // SAFETY: the SGEs point into buffers the test owns and keeps alive while the rings are in use.
    assert!(unsafe { rxe.post_send(&mut qp, &[wr]) }.is_err());
    assert_eq!(written(&fd), 0);
    rxe.qp_state_changed(&mut qp, QpState::Init);
    // SAFETY: the SGEs point into buffers the test owns and keeps alive while the rings are in use.
    unsafe { rxe.post_recv(&mut qp, &[RecvWr { wr_id: 5, sgl: &sg }]) }
        .unwrap();
    assert_eq!(krq.load_u32(QB_PRODUCER_INDEX), 1);
    assert_eq!(written(&fd), 0, "receives need no syscall");
    rxe.qp_state_changed(&mut qp, QpState::Rtr);
    rxe.qp_state_changed(&mut qp, QpState::Rts);

    // Three sends in one call: one doorbell, 32 bytes, for QP handle 7.
    let mut w2 = wr;
    w2.wr_id = 43;
    let mut w3 = wr;
    w3.wr_id = 44;
    // SAFETY: the SGEs point into buffers the test owns and keeps alive while the rings are in use.
    unsafe { rxe.post_send(&mut qp, &[wr, w2, w3]) }.unwrap();
    assert_eq!(written(&fd), 32);
    let db = pread(&fd, 0, 32);
    assert_eq!(&db[0..8], &[28, 0, 0, 0, 8, 0, 1, 0]);
    assert_eq!(&db[16..20], &7u32.to_ne_bytes());
    assert_eq!(&db[28..32], &128u32.to_ne_bytes());
    assert_eq!(ksq.load_u32(QB_PRODUCER_INDEX), 3);
    let mut slot = [0u8; 256];
    rd(&ksq, ksq.slot_offset(2), &mut slot);
    assert_eq!(u64::from_ne_bytes(slot[0..8].try_into().unwrap()), 44);
    assert_eq!(
        u64::from_ne_bytes(slot[WQE_IOVA..WQE_IOVA + 8].try_into().unwrap()),
        0x8000
    );

    // The "kernel" consumes them and completes the three.
    for i in 0..3u32 {
        let wc = WorkCompletion {
            wr_id: 42 + i as u64,
            opcode: WcOpcode::RdmaWrite,
            byte_len: 32,
            qp_num: 17,
            ..Default::default()
        };
        wr_bytes(&kcq, kcq.slot_offset(i), &encode_wc(&wc, 0));
    }
    ksq.store_u32(QB_CONSUMER_INDEX, 3);
    kcq.store_u32(QB_PRODUCER_INDEX, 3);
    let mut wcs = [WorkCompletion::default(); 8];
    assert_eq!(rxe.poll_cq(&mut cq, &mut wcs).unwrap(), 3);
    assert_eq!(
        wcs[..3].iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        vec![42, 43, 44]
    );
    assert_eq!(kcq.load_u32(QB_CONSUMER_INDEX), 3);
    assert_eq!(rxe.poll_cq(&mut cq, &mut wcs).unwrap(), 0);

    // An empty post is a no-op: no doorbell.
    // SAFETY: the SGEs point into buffers the test owns and keeps alive while the rings are in use.
    unsafe { rxe.post_send(&mut qp, &[]) }.unwrap();
    assert_eq!(written(&fd), 32);

    // Arm: REQ_NOTIFY_CQ {23, 4, 0} {cq_handle 1, solicited_only 1}.
    rxe.arm_cq(&mut cq, true).unwrap();
    assert_eq!(written(&fd), 48);
    let n = pread(&fd, 32, 16);
    assert_eq!(&n[0..8], &[23, 0, 0, 0, 4, 0, 0, 0]);
    assert_eq!(
        &n[8..16],
        &[1u32.to_ne_bytes(), 1u32.to_ne_bytes()].concat()[..]
    );
    rxe.cq_event(&mut cq);

    // SRQ: 24-byte response {mi, srq_num, reserved}; the QP using it maps no RQ.
    let ksrq = kernel_ring(&fd, SRQ_OFF, 6, 16);
    let (prep, ud) = rxe.prepare_srq(15, 1).unwrap();
    assert_eq!((ud.req.len(), ud.resp_len), (0, 24));
    let mut r = [0u8; 24];
    r[..16].copy_from_slice(&mminfo(SRQ_OFF, 4096));
    r[16..20].copy_from_slice(&0x33u32.to_ne_bytes());
    let mut srq = rxe
        .finish_srq(
            prep,
            &SrqCreated {
                handle: 2,
                max_wr: 15,
                max_sge: 1,
                srqn: 0x33,
            },
            &r,
        )
        .unwrap();
    assert_eq!(srq.srq_num(), 0x33);
    // SAFETY: the SGEs point into buffers the test owns and keeps alive while the rings are in use.
    unsafe { rxe.post_srq_recv(&mut srq, &[RecvWr { wr_id: 9, sgl: &sg }]) }
        .unwrap();
    assert_eq!(ksrq.load_u32(QB_PRODUCER_INDEX), 1);

    let sattr = QpInitAttr {
        uses_srq: true,
        ..attr
    };
    let (prep, _) = rxe.prepare_qp(&sattr).unwrap();
    let mut resp = [0u8; 32];
    resp[16..].copy_from_slice(&mminfo(SQ_OFF + 4 * 4096, 4096));
    let _k2 = kernel_ring(&fd, SQ_OFF + 4 * 4096, 8, 8);
    let mut sqp = rxe.finish_qp(prep, &sattr, &created, &resp).unwrap();
    assert_eq!(sqp.recv_capacity(), 0);
    // SAFETY: the SGEs point into buffers the test owns and keeps alive while the rings are in use.
    assert!(unsafe { rxe
        .post_recv(&mut sqp, &[RecvWr { wr_id: 1, sgl: &sg }]) }
        .is_err());

    // AH: 8-byte response {ah_num, reserved}.
    let (prep, ud) = rxe.prepare_ah(&AhAttr::default()).unwrap();
    assert_eq!((ud.req.len(), ud.resp_len), (0, 8));
    let ah = rxe
        .finish_ah(
            prep,
            &AhAttr::default(),
            &AhCreated { handle: 3 },
            &[4, 0, 0, 0, 0, 0, 0, 0],
        )
        .unwrap();
    assert_eq!(rxe.ah_number(&ah), u32::from_ne_bytes([4, 0, 0, 0]));
    assert!(rxe
        .finish_ah((), &AhAttr::default(), &AhCreated { handle: 3 }, &[0; 8])
        .is_err());

    // A bad mminfo (size 0, or geometry that does not fit the mapping) fails finish_cq cleanly.
    assert!(rxe
        .finish_cq((), &CqCreated { handle: 1, cqe: 1 }, &mminfo(CQ_OFF, 0))
        .is_err());
    let kbad = kernel_ring(&fd, SRQ_OFF + 4096, 7, 64); // 64 × 128 B do not fit one page
    let e = rxe
        .finish_cq(
            (),
            &CqCreated { handle: 1, cqe: 63 },
            &mminfo(SRQ_OFF + 4096, 4096),
        )
        .err()
        .unwrap();
    assert!(e.to_string().contains("need"), "{e}");
    drop(kbad);

    // Drop order as uverbs does it (kernel destroy first, then the provider objects): unmaps.
    drop(qp);
    drop(sqp);
    drop(srq);
    drop(cq);
}

/// rxe has no Dynamically Connected QPs: both ways in are refused with EOPNOTSUPP and a line
/// naming the type, before any kernel command.
#[test]
fn rxe_refuses_dc_qps() {
    let fd = Arc::new(memfd());
    let rxe = Rxe::new_context(fd, &dev(), &[], &Default::default()).unwrap();
    for qp_type in [QpType::Dci, QpType::Dct] {
        let attr = QpInitAttr {
            qp_type,
            caps: QpCaps { max_send_wr: 4, max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 0, max_inline_data: 0 },
            sq_sig_all: false,
            uses_srq: qp_type == QpType::Dct,
        };
        // rxe has no `uverbs::dv::DcProvider` (a DC QP cannot be asked of it); a plain create
        // with a DC type is refused.
        let e = rxe.prepare_qp(&attr).expect_err("rxe refuses DC");
        assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
        assert!(e.to_string().contains(qp_type.name()) && e.to_string().contains("mlx5"), "{e}");
    }
}

#[test]
fn rxe_refuses_xrc_cleanly() {
    // The kernel's rxe has no XRC: the provider says so before any kernel command, as an
    // error (never a panic), for both XRC QP types.
    let fd = Arc::new(memfd());
    let rxe = Rxe::new_context(fd, &dev(), &[], &Default::default()).unwrap();
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    for qp_type in [QpType::XrcIni, QpType::XrcTgt] {
        let attr = QpInitAttr { qp_type, caps, sq_sig_all: false, uses_srq: false };
        let e = rxe.prepare_qp(&attr).expect_err("rxe must refuse an XRC QP");
        let text = e.to_string();
        assert!(text.contains("XRC") && text.contains(qp_type.name()), "{text}");
        assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
    }
    // An XRC SRQ cannot be asked of rxe: it has no `uverbs::dv::XrcSrqProvider`.
    // The basic types still prepare.
    let attr = QpInitAttr { qp_type: QpType::Rc, caps, sq_sig_all: false, uses_srq: false };
    assert!(rxe.prepare_qp(&attr).is_ok());
}

/// mlx5's extensions are reached only through an mlx5 device: `open_devx` refuses an rxe one
/// as `mlx5dv_open_device` does (EOPNOTSUPP), before opening anything.
#[test]
fn devx_open_refuses_an_rxe_device() {
    struct Never;
    impl providers::Mlx5User for Never {
        type Output = ();
        fn run(self, _ctx: Arc<uverbs::objects::Context<providers::mlx5::Mlx5>>) {
            panic!("an rxe device reached the mlx5 user");
        }
    }
    let desc = uverbs::provider::DeviceDesc { uverbs: "uverbs-none".into(), ..dev() };
    let e = providers::open_devx(&desc, &Default::default(), Never).expect_err("rxe has no DEVX");
    assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
    let text = e.to_string();
    assert!(text.contains("rxe provider has no DEVX context (an mlx5 feature)") && text.contains(&desc.ibdev), "{text}");
}
