//go:build !cuda12

package cudadrv

// graphAddNode adds a node of params to g with no dependencies: CUDA 13's
// cuGraphAddNode takes the edge data CUDA 12's _v2 added.
func graphAddNode(node *GraphNode, g Graph, params *GraphNodeParams) error {
	return GraphAddNode(node, g, nil, nil, 0, params)
}
