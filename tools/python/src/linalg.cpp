// tools/python/src/linalg.cpp - genesis._C.linalg: the factorizations and solves of
// genesis/linalg.hpp with torch.linalg's names, keywords and named tuples, plus Tensor.det,
// inverse, slogdet and logdet.  A singular or non-positive-definite matrix raises
// genesis.linalg.LinAlgError, a RuntimeError as torch.linalg.LinAlgError is; every other bad
// input raises RuntimeError, as torch.linalg does.
#include "bind.h"
#include "genesis/linalg.hpp"

namespace genesis::python {
namespace {

namespace la = genesis::linalg;

py::object named(const char* name, const char* fields) {
  return py::module_::import("collections").attr("namedtuple")(name, fields);
}

// genesis.linalg.LinAlgError (set in bind_linalg).
py::object& linalg_error_type() {
  static py::object type;
  return type;
}

// Runs f: a LinAlgError is raised here as genesis.linalg.LinAlgError; other genesis errors become
// the RuntimeError torch.linalg raises for bad input.
template <class F>
auto torch_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const la::LinAlgError& e) {
    PyErr_SetString(linalg_error_type().ptr(), e.what());
    throw py::error_already_set();
  } catch (const Error& e) {
    if (e.code() == GN_ERR_OUT_OF_MEMORY || e.code() == GN_ERR_IO) throw;
    throw std::runtime_error(e.what());
  }
}

py::object pair_of(const char* name, const char* fields, const std::pair<Tensor, Tensor>& p) {
  static std::map<std::string, py::object> types;
  py::object& t = types[name];
  if (!t) t = named(name, fields);
  return t(p.first, p.second);
}

void bind_linalg_module(py::module_& lm) {
  lm.def(
        "solve",
        [](const Tensor& A, const Tensor& B, bool left) { return torch_errors([&] { return la::solve(A, B, left); }); },
        py::arg("A"), py::arg("B"), py::kw_only(), py::arg("left") = true,
        "X with A X = B (left) or X A = B; B may be a batch of vectors (torch.linalg.solve).")
      .def(
          "inv", [](const Tensor& A) { return torch_errors([&] { return la::inv(A); }); }, py::arg("A"),
          "The inverse of every square matrix of A.")
      .def(
          "det", [](const Tensor& A) { return torch_errors([&] { return la::det(A); }); }, py::arg("A"),
          "Determinants of the square matrices of A.")
      .def(
          "slogdet",
          [](const Tensor& A) {
            return pair_of("linalg_slogdet", "sign logabsdet", torch_errors([&] { return la::slogdet(A); }));
          },
          py::arg("A"), "(sign, logabsdet) of the determinants of A.")
      .def(
          "cholesky", [](const Tensor& A, bool upper) { return torch_errors([&] { return la::cholesky(A, upper); }); },
          py::arg("A"), py::kw_only(), py::arg("upper") = false,
          "The Cholesky factor of symmetric positive-definite A.")
      .def(
          "cholesky_ex",
          [](const Tensor& A, bool upper, bool check_errors) {
            auto r = torch_errors([&] { return la::cholesky_ex(A, upper); });
            if (check_errors && r.second.numel() && r.second.abs().max().item_double() != 0)
              torch_errors([&] { return la::cholesky(A, upper); });  // raises with torch's message
            return pair_of("linalg_cholesky_ex", "L info", r);
          },
          py::arg("A"), py::kw_only(), py::arg("upper") = false, py::arg("check_errors") = false,
          "(L, info): cholesky without the positive-definiteness check.")
      .def(
          "qr",
          [](const Tensor& A, const std::string& mode) {
            return pair_of("linalg_qr", "Q R", torch_errors([&] { return la::qr(A, mode); }));
          },
          py::arg("A"), py::arg("mode") = "reduced", "(Q, R) of A = Q R (mode 'reduced', 'complete' or 'r').")
      .def(
          "svd",
          [](const Tensor& A, bool full_matrices, py::handle) {
            static py::object type = named("linalg_svd", "U S Vh");
            const la::SVD s = torch_errors([&] { return la::svd(A, full_matrices); });
            return type(s.U, s.S, s.Vh);
          },
          py::arg("A"), py::arg("full_matrices") = true, py::kw_only(), py::arg("driver") = py::none(),
          "(U, S, Vh) of A = U diag(S) Vh, S descending.")
      .def(
          "svdvals", [](const Tensor& A, py::handle) { return torch_errors([&] { return la::svdvals(A); }); },
          py::arg("A"), py::kw_only(), py::arg("driver") = py::none(), "The singular values of A, descending.")
      .def(
          "eigh",
          [](const Tensor& A, const std::string& uplo) {
            return pair_of("linalg_eigh", "eigenvalues eigenvectors", torch_errors([&] { return la::eigh(A, uplo); }));
          },
          py::arg("A"), py::arg("UPLO") = "L", "(eigenvalues ascending, eigenvectors) of symmetric A.")
      .def(
          "eigvalsh",
          [](const Tensor& A, const std::string& uplo) { return torch_errors([&] { return la::eigvalsh(A, uplo); }); },
          py::arg("A"), py::arg("UPLO") = "L", "The eigenvalues of symmetric A, ascending.")
      .def(
          "solve_triangular",
          [](const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
            return torch_errors([&] { return la::solve_triangular(A, B, upper, left, unitriangular); });
          },
          py::arg("A"), py::arg("B"), py::kw_only(), py::arg("upper"), py::arg("left") = true,
          py::arg("unitriangular") = false, "X with A X = B (left) or X A = B for triangular A.")
      .def(
          "lu_factor",
          [](const Tensor& A, bool pivot) {
            if (!pivot) throw std::runtime_error("linalg.lu_factor: LU without pivoting is not implemented on the CPU");
            return pair_of("linalg_lu_factor", "LU pivots", torch_errors([&] { return la::lu_factor(A); }));
          },
          py::arg("A"), py::kw_only(), py::arg("pivot") = true, "(LU, pivots) of P A = L U, as LAPACK's getrf.")
      .def(
          "lu_factor_ex",
          [](const Tensor& A, bool pivot, bool check_errors) {
            if (!pivot) throw std::runtime_error("linalg.lu_factor: LU without pivoting is not implemented on the CPU");
            static py::object type = named("linalg_lu_factor_ex", "LU pivots info");
            const la::LUFactorEx f = torch_errors([&] { return la::lu_factor_ex(A); });
            if (check_errors && f.info.numel() && f.info.abs().max().item_double() != 0)
              torch_errors([&] { return la::lu_factor(A); });  // raises with torch's message
            return type(f.LU, f.pivots, f.info);
          },
          py::arg("A"), py::kw_only(), py::arg("pivot") = true, py::arg("check_errors") = false,
          "(LU, pivots, info): lu_factor without the check.")
      .def(
          "lu_solve",
          [](const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
            return torch_errors([&] { return la::lu_solve(LU, pivots, B, left, adjoint); });
          },
          py::arg("LU"), py::arg("pivots"), py::arg("B"), py::kw_only(), py::arg("left") = true,
          py::arg("adjoint") = false, "X with A X = B from lu_factor's LU and pivots.");
}

void bind_tensor_linalg(py::module_& m) {
  py::class_<Tensor> t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  t.def("det", [](const Tensor& A) { return torch_errors([&] { return la::det(A); }); })
      .def("inverse", [](const Tensor& A) { return torch_errors([&] { return la::inv(A); }); })
      .def("slogdet",
           [](const Tensor& A) {
             return pair_of("slogdet", "sign logabsdet", torch_errors([&] { return la::slogdet(A); }));
           })
      .def("logdet", [](const Tensor& A) { return torch_errors([&] { return la::logdet(A); }); });
}

}  // namespace

void bind_linalg(py::module_& m) {
  py::module_ lm = m.def_submodule("linalg", "torch.linalg's factorizations and solves");
  linalg_error_type() = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("genesis._C.linalg.LinAlgError",
                                "A numerical failure of a factorization: a singular or non-positive-definite matrix.",
                                PyExc_RuntimeError, nullptr));
  lm.attr("LinAlgError") = linalg_error_type();
  bind_linalg_module(lm);
  bind_tensor_linalg(m);
}

}  // namespace genesis::python
