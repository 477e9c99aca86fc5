//! Keyword options taken from `**kwargs`, refused and typed as Python refuses and
//! types them, so options shared by several functions are listed once.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The error Python gives for a keyword a function does not take.
pub fn unexpected(function: &str, key: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{function}() got an unexpected keyword argument '{key}'"
    ))
}

/// One keyword argument: its value converted with the argument named in the
/// error, as PyO3 names a declared argument.
pub struct Keyword<'a, 'py>(pub &'a str, pub &'a Bound<'py, PyAny>);

impl<'py> Keyword<'_, 'py> {
    pub fn get<T: FromPyObject<'py>>(&self) -> PyResult<T> {
        let Keyword(name, value) = self;
        value.extract().map_err(|e| {
            if e.is_instance_of::<PyTypeError>(value.py()) {
                PyTypeError::new_err(format!("argument '{name}': {}", e.value(value.py())))
            } else {
                e
            }
        })
    }
}

/// The keyword arguments of `kwargs`, in the order given.
pub fn each<'a, 'py>(
    kwargs: Option<&'a Bound<'py, PyDict>>,
) -> impl Iterator<Item = PyResult<(String, Bound<'py, PyAny>)>> + 'a {
    kwargs
        .into_iter()
        .flat_map(|d| d.iter())
        .map(|(key, value)| Ok((key.extract::<String>()?, value)))
}
