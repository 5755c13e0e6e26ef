impl Interval {
    pub fn lower(&self) -> u32 {
        self.lower
    }
    pub fn set_lower(&mut self, lower: u32) {
        self.lower = lower;
    }
    pub fn is_empty(&self) -> bool {
        self.upper < self.lower
    }
    pub fn bounds(&self) -> Option<(u32, u32)> {
        if self.is_valid {
            Some((self.lower, self.upper))
        } else {
            None
        }
    }
    #[inline]
    pub fn len(&self) -> u32 {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::Interval::len"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &[],
        );
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
        {
            self.upper.saturating_sub(self.lower)
        }
    }
    #[inline]
    pub fn upper(&self) -> u32 {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::Interval::upper"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &[],
        );
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
        {
            self.upper
        }
    }
    pub fn sum(&self) -> u64 {
        let mut total = 0;
        for i in self.lower..self.upper {
            total += u64::from(i);
        }
        total
    }
}
