"""Everything that *is* a problem: environments, the WorldTest protocol, the registry.

Pure Python with numpy and networkx; the only files it touches are its own (programs,
problem files, the library it derives).
"""
