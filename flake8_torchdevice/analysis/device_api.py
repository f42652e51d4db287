"""The attributes of the device modules whose names code misspells (TDV115).

Every name ``dir()`` lists, and every submodule, of ``torch.cuda``, ``torch.mps`` and
``torch.backends.mps`` in torch 2.13 (names only). A name read from one of these modules that is
not here, but is one or two typing slips from one that is, raises ``AttributeError`` (or
``ImportError``) on every machine. ``device_slip`` reads the one word of ``torch``'s own top level that
code misspells this way, ``device`` (``torch.dev``, a factory's ``dev=``).
"""

from __future__ import annotations

from typing import Optional

KNOWN = {
    "torch.cuda": frozenset("""
        AcceleratorError Any BFloat16Storage BFloat16Tensor BoolStorage BoolTensor ByteStorage ByteTensor
        CUDAGraph CUDAPluggableAllocator Callable CharStorage CharTensor ComplexDoubleStorage
        ComplexFloatStorage CudaError DEVICE_REQUIREMENT DeferredCudaCallError Device DoubleStorage
        DoubleTensor Event ExternalStream FloatStorage FloatTensor GreenContext HalfStorage HalfTensor
        IntStorage IntTensor LongStorage LongTensor MemPool NewType Optional OutOfMemoryError
        PYTORCH_RELEASES_CODE_CC ShortStorage ShortTensor Stream StreamContext TYPE_CHECKING _AMDSMI_ERR
        _CompatInterval _CompatSet _CudaBase _CudaDeviceProperties _DeviceGuard _HAS_AMDSMI _HAS_PYNVML
        _LazySeedTracker _POOL_HANDLE _PYNVML_ERR _WrappedTritonKernel _annotate_cuda_graph_trace
        _cached_device_count _cached_hip_to_amdsmi _check_bf16_tensor_supported _check_capability
        _check_cubins _code_compatible_with_device _compile_kernel _cudart _device_count_amdsmi
        _device_count_nvml _device_limits _dummy_type _exchange_device _extract_arch_version
        _get_amdsmi_clock_rate _get_amdsmi_device_index _get_amdsmi_device_index_from_hip_index
        _get_amdsmi_device_memory_used _get_amdsmi_handler _get_amdsmi_memory_usage _get_amdsmi_power_draw
        _get_amdsmi_temperature _get_amdsmi_utilization _get_device _get_device_index _get_generator
        _get_nvml_device_index _get_pynvml_handler _get_rng_state_offset _gpu_trace _graph_annotations
        _host_arch_key _initialization_lock _initialized _is_compiled _is_in_bad_fork _lazy_call _lazy_init
        _lazy_new _lazy_seed_tracker _maybe_exchange_device _memory_viz _nvml_based_avail
        _parse_visible_devices _pin_memory_utils _queued_calls _raw_device_count_amdsmi
        _raw_device_count_nvml _raw_device_uuid_amdsmi _raw_device_uuid_nvml _register_triton_kernels
        _sanitizer _set_rng_state_offset _set_stream_by_id _sleep _tls _transform_uuid_to_ordinals _use_uvm
        _utils _warn_typed_storage_removal _warn_unsupported_code amp caching_allocator_alloc
        caching_allocator_delete caching_allocator_disabled caching_allocator_enable can_device_access_peer
        cast change_current_allocator check_error classproperty clock_rate comm cudaStatus cudart
        current_blas_handle current_device current_solver_handle current_stream default_generators
        default_stream device device_count device_memory_used device_of empty_cache gds
        get_allocator_backend get_arch_list get_device_capability get_device_name get_device_properties
        get_gencode_flags get_per_process_memory_fraction get_rng_state get_rng_state_all
        get_stream_from_external get_sync_debug_mode graph graph_pool_handle graphs green_contexts has_half
        has_magma host_memory_stats host_memory_stats_as_nested_dict importlib init initial_seed ipc_collect
        is_available is_bf16_supported is_current_stream_capturing is_initialized is_tf32_supported
        jiterator list_gpu_processes lru_cache make_graphed_callables manual_seed manual_seed_all
        max_memory_allocated max_memory_cached max_memory_reserved mem_get_info memory memory_allocated
        memory_cached memory_reserved memory_snapshot memory_stats memory_stats_as_nested_dict
        memory_summary memory_usage nccl nvtx os platform power_draw profiler random
        reset_accumulated_host_memory_stats reset_accumulated_memory_stats reset_max_memory_allocated
        reset_max_memory_cached reset_peak_host_memory_stats reset_peak_memory_stats seed seed_all
        set_device set_per_process_memory_fraction set_rng_state set_rng_state_all set_stream
        set_sync_debug_mode sparse stream streams synchronize temperature threading torch traceback tunable
        use_mem_pool utilization warnings
    """.split()),
    "torch.mps": frozenset("""
        Event Tensor _default_mps_generator _get_default_mps_generator _host_alias_storage _is_in_bad_fork
        compile_shader current_allocated_memory device_count driver_allocated_memory empty_cache event
        get_rng_state is_available load_metallib manual_seed profiler recommended_max_memory seed
        set_per_process_memory_fraction set_rng_state synchronize torch
    """.split()),
    "torch.backends.mps": frozenset("""
        Optional TYPE_CHECKING _Library _lru_cache get_core_count get_name is_available is_built
        is_macos13_or_newer is_macos_or_newer torch
    """.split()),
}

# Names a module imports for its own use (``torch.cuda.Optional``): no one means to call them.
_NOT_API = frozenset({"Any", "Callable", "Optional", "NewType", "TYPE_CHECKING", "importlib", "os", "platform",
                      "threading", "torch", "traceback", "warnings", "lru_cache", "classproperty"})


def misspelled(namespace: str, attr: str) -> Optional[tuple[str, ...]]:
    """The public names of ``namespace`` that ``attr``, which it lacks, is one or two slips from (a letter
    or underscore left out or added, two neighbours swapped, one letter mistyped; the digits the same), or None
    where ``attr`` is a real name, too short to tell, or near none."""
    known = KNOWN.get(namespace)
    if known is None or attr in known or len(attr) < 4:
        return None
    best: list = []
    for name in sorted(known):
        if name.startswith("_") or name in _NOT_API or _digits(name) != _digits(attr):
            continue
        distance = 0 if name.lower() == attr.lower() else _slips(attr, name)
        # Two edits of a word of the same length are two mistyped letters: another name (``is_fp16_supported``
        # some code installs beside ``is_bf16_supported``), not a slip.
        if distance <= (1 if len(name) == len(attr) else 2):
            best.append((distance, name))
    if not best:
        return None
    closest = min(distance for distance, _ in best)
    return tuple(name for distance, name in best if distance == closest)


def _digits(word: str) -> str:
    return "".join(char for char in word if char.isdigit())


def _slips(a: str, b: str) -> int:
    """Edit distance counting a swap of neighbours as one edit (optimal string alignment), capped at 3."""
    if abs(len(a) - len(b)) > 2:
        return 3
    previous2: list = []
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, other in enumerate(b, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (char != other))
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return min(previous[-1], 3)


# torch's top-level names within two slips of "device" (torch 2.13; its top level has thousands, no
# other is that near): a slip of "device" read from ``torch`` or given as a factory's keyword is neither.
_NEAR_DEVICE = frozenset({"device", "divide"})


def device_slip(word: str) -> bool:
    """Is ``word`` "device" misspelled, as torch has no such name or keyword: cut short (``dev``,
    ``devic``), one or two slips after its first three letters (``devcie``, ``devices``), or capitalised
    (``Device``)? Not ``device`` itself, nor a word nearer torch's ``divide``. A slip in the first three
    letters (``dvice``) is not read: TDV115's selection keeps code by the words that hold ``dev``."""
    lowered = word.lower()
    if word in _NEAR_DEVICE or not lowered.startswith("dev"):
        return False
    if "device".startswith(lowered):
        return True
    distance = _slips(lowered, "device")
    return distance <= (1 if len(lowered) == 6 else 2) and _slips(lowered, "divide") > distance
