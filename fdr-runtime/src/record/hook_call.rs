//! The call from a hook inlined into an instrumented function to the recording path, made so
//! that the function keeps the registers it most needs.
//!
//! A plain call lets the callee change every caller-saved register, so a function whose hook
//! may call out keeps what it needs after the call in callee-saved registers, which it saves in
//! its prologue and restores on every return: a small function pays for those saves on every
//! call, recorder or not. Worse, LLVM prices a call high when it decides what to inline, so an
//! instrumented function with its two hooks' calls, and every small instrumented function
//! inlined into it with theirs, stops being inlined: on regex-syntax annotated function by
//! function (`benches/real`), code that the compiler had inlined and simplified ran as calls,
//! and that, not the hooks' own tests, was most of what fdr cost compiled in with no recorder.
//!
//! So on x86-64 and AArch64 (Linux and macOS) the call is made from inline assembly that saves
//! and restores around it the registers that carry a function's first arguments, which it most
//! often still needs, and tells the compiler which others the callee may change (the scratch
//! registers, the vector registers, the flags): to the function that holds it, the hook is a
//! test, a branch and an opaque instruction, and LLVM prices inline assembly at next to
//! nothing. On x86-64 the sequence also finds itself a stack (past the red zone, aligned), so
//! that a function whose only call was a hook's needs no prologue at all.
//!
//! Measured (2026-11-28, `benches/README.md`): regex-syntax and serde_json from crates.io,
//! annotated whole, compiled in with no recorder, ran 1.78 and 1.55 x pristine's instructions
//! instead of 2.06 and 1.68 x (function by function; 1.53 and 1.53 x instead of 1.77 and 1.65 x
//! as `#[instrument_fdr]` on whole modules), and regex-syntax 0.89 to 0.96 x its wall time
//! before, paired runs on a noisy machine; a call with no recorder or culled is 15 instructions instead of 18 in
//! the hot-path bench, and 0.65 x its time. A recorded call pays for the saves: 16 more
//! instructions (two hooks), about 5 % of its time. Saving every caller-saved register instead
//! inlined a little more (regex-syntax 1.74 x) for twice the saves. Declaring the descriptor's
//! register (`rdi`) changed instead of saving it took 6 instructions off a recorded call and
//! cost regex-syntax 2.4 % more instructions compiled in (1.822 x pristine against 1.778 x: one
//! register fewer that the compiler can keep across a hook), so it is saved (2026-11-28).
//!
//! The callees are `extern "C"`, the convention the assembly assumes, and never unwind (a panic
//! in them aborts the process rather than unwinding through the assembly, which describes no
//! frame to an unwinder). Elsewhere, and under Miri, the hooks make plain calls.

//! The module names nothing of the runtime: [`preserving_call`] makes the function that calls
//! a given target where the caller says (`hot_path`).

/// `preserving_call!(pub(crate) fn name(&'static T) -> u64 = target)` defines `name(f)`, the
/// call of `target(f)` through this target's sequence ([`sequence`]): `target` an `extern "C"`
/// function that does not unwind and takes a pointer-sized argument.
macro_rules! preserving_call {
    ($vis:vis fn $name:ident($arg:ty) -> $ret:ty = $target:path) => {
        #[inline(always)]
        $vis fn $name(f: $arg) -> $ret {
            $crate::record::hook_call::sequence!(f, $target)
        }
    };
}

/// `sequence!(f, target)`: the x86-64 call of `target(f)`, an expression of its result.
#[cfg(all(target_arch = "x86_64", unix, not(miri)))]
macro_rules! sequence {
    ($f:expr, $target:path) => {{
        let out;
        // SAFETY: the sequence calls the target, an `extern "C"` (System V) function that does
        // not unwind (`preserving_call`'s contract), with `f` in `rdi` as that convention passes
        // it; its result comes back in `rax`, declared written (`out`, not `lateout`: the
        // sequence uses it before the call to hold the stack pointer). Of the other general
        // registers the convention lets the callee change, the sequence saves and restores
        // `rdi`, `rsi`, `rdx` and `rcx`, and declares `r8` to `r11`
        // clobbered (a call through a lazily bound PLT entry changes no other); the
        // callee-saved ones the callee keeps itself. The vector (with AVX-512, `xmm16` to
        // `xmm31` and the mask registers too), x87 and MMX registers the callee may change are
        // declared clobbered, so the compiler keeps nothing there across the call, and the flags
        // are not preserved (no `preserves_flags`). The stack: with `nostack` the compiler
        // neither aligns the stack pointer for the block nor keeps the 128-byte red zone below it
        // free, which spares a function whose only call is this one a prologue; so the sequence
        // steps over the red zone itself, aligns the stack pointer to 16 bytes, pushes the
        // original twice (six pushes in all keep the alignment for the call) and pops it into
        // `rsp` last. A signal delivered meanwhile lands below the stack pointer, as always, and
        // nothing here is unwound through.
        unsafe {
            #[cfg(not(target_feature = "avx512f"))]
            $crate::record::hook_call::sequence!(@emit $f, $target, out,);
            #[cfg(target_feature = "avx512f")]
            $crate::record::hook_call::sequence!(@emit $f, $target, out,
                out("xmm16") _, out("xmm17") _, out("xmm18") _, out("xmm19") _,
                out("xmm20") _, out("xmm21") _, out("xmm22") _, out("xmm23") _,
                out("xmm24") _, out("xmm25") _, out("xmm26") _, out("xmm27") _,
                out("xmm28") _, out("xmm29") _, out("xmm30") _, out("xmm31") _,
                out("k1") _, out("k2") _, out("k3") _, out("k4") _,
                out("k5") _, out("k6") _, out("k7") _,
            );
        }
        out
    }};
    (@emit $f:expr, $target:path, $out:ident, $($wide:tt)*) => {
        core::arch::asm!(
            "mov rax, rsp",
            "lea rsp, [rsp - 128]",
            "and rsp, -16",
            "push rax",
            "push rax",
            "push rdi",
            "push rsi",
            "push rdx",
            "push rcx",
            "call {target}",
            "pop rcx",
            "pop rdx",
            "pop rsi",
            "pop rdi",
            "pop rsp",
            target = sym $target,
            in("rdi") $f,
            out("rax") $out,
            out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            out("mm0") _, out("mm1") _, out("mm2") _, out("mm3") _,
            out("mm4") _, out("mm5") _, out("mm6") _, out("mm7") _,
            $($wide)*
            options(nostack),
        )
    };
}

/// `sequence!(f, target)`: the AArch64 call of `target(f)`, an expression of its result.
#[cfg(all(target_arch = "aarch64", unix, not(miri)))]
macro_rules! sequence {
    ($f:expr, $target:path) => {{
        let out;
        // SAFETY: the sequence calls the target, an `extern "C"` (AAPCS64) function that does not
        // unwind (`preserving_call`'s contract), with `f` in `x0`, where its result comes back,
        // declared written. Of the other general registers the convention lets the callee
        // change, the sequence saves and restores the argument registers `x1` to `x7`, `x18` (the
        // platform register, saved whether or not the system lets code use it, so never named to
        // the compiler) and the link register `x30`, which the call itself overwrites; it
        // declares `x8` to `x17` clobbered (a linker's veneer or PLT entry uses `x16` and
        // `x17`). Five stores of 16 bytes keep the stack pointer 16-byte aligned. The vector
        // registers, whose upper halves the callee may change even where the convention keeps the
        // lower ones, are declared clobbered, and the flags are not preserved.
        unsafe {
            core::arch::asm!(
                "stp x1, x2, [sp, #-16]!",
                "stp x3, x4, [sp, #-16]!",
                "stp x5, x6, [sp, #-16]!",
                "stp x7, x18, [sp, #-16]!",
                "str x30, [sp, #-16]!",
                "bl {target}",
                "ldr x30, [sp], #16",
                "ldp x7, x18, [sp], #16",
                "ldp x5, x6, [sp], #16",
                "ldp x3, x4, [sp], #16",
                "ldp x1, x2, [sp], #16",
                target = sym $target,
                inlateout("x0") $f => out,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _,
                out("x12") _, out("x13") _, out("x14") _, out("x15") _,
                out("x16") _, out("x17") _,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                out("v12") _, out("v13") _, out("v14") _, out("v15") _,
                out("v16") _, out("v17") _, out("v18") _, out("v19") _,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            );
        }
        out
    }};
}

/// `sequence!(f, target)`: a plain call of `target(f)`, where no assembly does it.
#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), unix, not(miri))))]
macro_rules! sequence {
    ($f:expr, $target:path) => {
        $target($f)
    };
}

pub(crate) use preserving_call;
pub(crate) use sequence;
